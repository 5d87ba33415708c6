"""``harness info``: this machine's fingerprint, its matched profile, and the backends here."""
from __future__ import annotations

import argparse
import json
from typing import Any

from rich.table import Table

from harness.commands.common import console
from harness.commands.machine_document import backend_rows, info_document
from harness.hardware.identity import profile_relation


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("info", help="show this machine, its hardware profile and the backends")
    p.add_argument("--json", action="store_true", help="print everything as JSON")
    p.add_argument("--results", nargs="*", metavar="PATH",
                   help="results files or folders to take this machine's measured ceilings from "
                        "(roofline records of this host and CPU; default: ./results if it exists)")
    p.set_defaults(func=main)


def _measured_clock_text(clock: dict[str, Any]) -> str:
    """'3.65 GHz on 2 cores at once (per core 3.61, 3.65; 0.6 s): method' or why there is none."""
    if not clock.get("ghz"):
        return f"none: {clock.get('why') or 'not measured (emulated)'}"
    per = ", ".join(f"{g:g}" for g in clock.get("per_thread_ghz") or [])
    return (f"{clock['ghz']:g} GHz on {clock.get('threads')} core(s) at once (per core {per}; "
            f"{clock.get('seconds', 0):g} s): {clock.get('method', '')}")


def _tuning_text(t: dict) -> str:
    bits = [f"governor {', '.join(t.get('governors') or []) or 'unknown'}",
            f"boost {({True: 'on', False: 'off'}).get(t.get('boost'), 'unknown')}",
            f"SMT {t.get('smt') or 'unknown'}"]
    if t.get("isolated"):
        bits.append(f"isolated CPUs {t['isolated']}")
    return ", ".join(bits) + "".join(f"\nwarning: {w}" for w in t.get("warnings", []))


def main(args: argparse.Namespace) -> int:
    doc, paths = info_document(args.results)
    if args.json:
        print(json.dumps(doc, indent=2))
        return 0
    fp, profile, mpi, env, ceilings = (doc["hardware"], doc["profile"], doc["mpi"], doc["environment"],
                                       doc["measured_ceilings"])
    mpiexec = mpi["mpiexec"]
    cpu = fp["cpu"]
    caches = ", ".join(f"L{c['level']}{(c['type'] or '')[:1].lower()} {c['size_bytes'] // 1024} KiB"
                       for c in cpu["caches"] if c["size_bytes"])
    t = Table(title="this machine", title_justify="left", show_header=False)
    t.add_column("key")
    t.add_column("value", overflow="fold")
    uarch = cpu.get("microarch") or {}
    emulation = fp.get("emulation") or {}
    profile_text = profile_relation(profile) or (f"unmatched ({profile['reason']})"
                                       + ("; measured ceilings below" if ceilings else
                                          "; measure it: harness run --workload roofline"))
    if profile["name"] and profile.get("reason"):
        profile_text += f" ({profile['reason']})"
    me, peaks = doc["machine"], doc["peaks"]
    for key, value in [
        ("machine", f"{me['label']} (key {me['key']}; core from {me['core_from']})"),
        ("host", fp["hostname"]),
        ("arch", fp["arch"] + (f"  EMULATED: {emulation.get('evidence')}" if emulation.get("emulated") else "")),
        ("cpu", cpu['model'] + (f" ({cpu['vendor']})" if cpu['vendor'] else "")),
        ("microarchitecture", f"{uarch['name']} (family {uarch['family']}, {uarch['source']})" if uarch.get("name")
         else uarch.get("reason", "unknown")),
        ("cores", f"{cpu['physical_cores']} physical, {cpu['logical_cpus']} logical, "
                  f"{cpu['usable_cpus']} usable, {cpu['sockets']} socket(s)"),
        ("max MHz", f"{cpu['max_mhz']} (reported)"),
        ("measured clock", _measured_clock_text(cpu.get("measured_clock") or {})),
        ("ISA flags", " ".join(cpu["flags"])), ("caches", caches),
        ("memory", f"{fp['memory_bytes'] / 2**30:.1f} GiB"),
        ("GPUs", ", ".join(g["name"] for g in fp["gpus"]) or "none"),
        ("clock", _tuning_text(fp.get("tuning") or {})),
        ("virtualised", {True: "yes", False: "no", None: "unknown"}[(fp.get("virtualisation") or {}).get("virtualised")]
         + f" ({(fp.get('virtualisation') or {}).get('evidence', '')})"),
        ("hardware profile", profile_text),
        ("fp64 peak", f"{peaks['fp64_gflops']:.4g} GFLOP/s, {peaks['how']}" if peaks.get("fp64_gflops")
         else f"none: {peaks.get('how')}"),
        ("mpiexec", f"{mpi['mpiexec']} ({mpi['flavour']})" if mpiexec else "none: pip install 'hpml-harness[mpi]'"),
        ("numerics env", " ".join(f"{k}={v}" for k, v in env.items()) or "(none set)"),
    ]:
        t.add_row(key, value)
    console.print(t)
    b = Table(title="backends", title_justify="left")
    for col in ("name", "available", "drives", "reason", "library", "version", "warnings", "source"):
        b.add_column(col, overflow="fold")
    for row in backend_rows():
        b.add_row(*row.values())
    console.print(b)
    if ceilings:
        c = Table(title=f"measured ceilings on this machine (records in {', '.join(paths)})",
                  title_justify="left")
        names = list(dict.fromkeys(n for row in ceilings for n in row["ceilings"]))
        units = {n: u for row in ceilings for n, u in row["units"].items()}
        for col in ["workload", "backend", "library", "threads", *(f"{n} ({units[n]})" for n in names), "measured"]:
            c.add_column(col, overflow="fold")
        for row in ceilings:
            c.add_row(row["workload"], row["backend"], row["library"], str(row["threads"]),
                      *(str(row["ceilings"].get(n, "")) for n in names), row["measured"])
        console.print(c)
    return 0
