"""The network interfaces a rank can send on, as the kernel shapes them: MTU, link speed and the
root queueing discipline (a `tbf` rate, say), and whether an NFQUEUE hands packets to a user-space
program (how a delay is added where the kernel has no netem). A timing taken over a shaped or
delayed link is only read right next to that shaping, so the record carries it."""
from __future__ import annotations

import functools
import pathlib
import shutil
import socket
import subprocess
from typing import Any


def _read(path: pathlib.Path) -> str | None:
    try:
        return path.read_text().strip()
    except OSError:
        return None


@functools.lru_cache(maxsize=1)
def _tc() -> str | None:
    """iproute2's `tc`: on PATH, or in /usr/sbin (not on a non-login root shell's PATH)."""
    return shutil.which("tc") or ("/usr/sbin/tc" if pathlib.Path("/usr/sbin/tc").exists() else None)


def _qdisc(iface: str) -> str | None:
    """The first line of `tc qdisc show dev IFACE` (the root qdisc), or None without `tc`."""
    tc = _tc()
    if tc is None:
        return None
    try:
        out = subprocess.run([tc, "qdisc", "show", "dev", iface], capture_output=True, text=True, timeout=2)
    except (OSError, subprocess.TimeoutExpired):
        return None
    first = out.stdout.strip().splitlines()[:1]
    return first[0] if out.returncode == 0 and first else None


def nfqueues(proc: pathlib.Path = pathlib.Path("/proc/self/net/netfilter/nfnetlink_queue")) -> list[dict[str, int]]:
    """The NFQUEUE queues bound in this network namespace, with how many packets each has seen."""
    rows = []
    for line in (_read(proc) or "").splitlines():
        f = line.split()
        # queue, peer portid, waiting, copy mode, copy range, dropped, user dropped, id sequence, 1
        if len(f) >= 8 and all(x.isdigit() for x in f[:8]):
            rows.append({"queue": int(f[0]), "waiting": int(f[2]), "dropped": int(f[5]) + int(f[6]),
                         "packets": int(f[7])})
    return rows


def links(net: pathlib.Path = pathlib.Path("/sys/class/net")) -> list[dict[str, Any]]:
    """Each non-loopback interface that has an IPv4 address: name, addresses, MTU, speed (Mbit/s,
    None where the driver does not say, as for veth) and root qdisc."""
    import psutil

    out = []
    for iface, addrs in sorted(psutil.net_if_addrs().items()):
        v4 = sorted(a.address for a in addrs if a.family == socket.AF_INET and not a.address.startswith("127."))
        if not v4:
            continue
        mtu, speed = _read(net / iface / "mtu"), _read(net / iface / "speed")
        out.append({"iface": iface, "addresses": v4, "mtu": int(mtu) if mtu and mtu.isdigit() else None,
                    "speed_mbps": int(speed) if speed and speed.lstrip("-").isdigit() and int(speed) > 0 else None,
                    "qdisc": _qdisc(iface)})
    return out
