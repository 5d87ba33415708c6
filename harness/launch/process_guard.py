"""The guard between ``harness run`` and a case's processes, so that nothing outlives its run.

``python process_guard.py --parent PID --deadline-s T -- ARGV...`` (run as a script: it imports nothing
from the harness, so it starts in milliseconds) starts ARGV in the guard's own process group and
session, and is a child subreaper (Linux ``PR_SET_CHILD_SUBREAPER``): a descendant that double-forks
or starts its own session is re-parented to the guard, not to init, so it stays in the tree the
guard kills. The guard ends the whole tree (SIGTERM, a grace period, SIGKILL) when

- ARGV's main process has exited (leftover grandchildren do not survive the case),
- its own deadline passes (exit status 124, "timeout" on stderr): the timeout holds even when
  the harness itself was killed,
- the harness dies (``PR_SET_PDEATHSIG`` delivers SIGTERM; a poll of the parent pid backs it up), or
- it receives SIGTERM, SIGHUP or SIGINT.

Otherwise it exits with ARGV's exit status (a signal as 128 + its number). With ``--report PATH``
it also writes what only it can see, as JSON: the tree's peak resident memory (the largest reaped
descendant's, from ``RUSAGE_CHILDREN``) and how many processes the kernel's OOM killer killed while
the case ran, in the guard's own memory cgroup (v2 ``memory.events``, v1 ``memory.oom_control``)
and on the whole machine (``/proc/vmstat``), so that a SIGKILL from the OOM killer is reported as
running out of memory rather than as an anonymous signal 9.
"""
from __future__ import annotations

import argparse
import ctypes
import json
import os
import resource
import signal
import subprocess
import sys
import time

TIMEOUT_STATUS = 124
PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36
POLL_S = 0.05
GRACE_S = 3.0


def _prctl(option: int, value: int) -> bool:
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(option, value, 0, 0, 0) == 0
    except (OSError, AttributeError):   # not Linux
        return False


def descendants(pid: int) -> list[int]:
    """Every process below ``pid`` (from /proc's parent links; empty where /proc is missing)."""
    children: dict[int, list[int]] = {}
    try:
        entries = os.listdir("/proc")
    except OSError:
        return []
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue
        ppid = int(stat[stat.rindex(b")") + 2:].split()[1])
        children.setdefault(ppid, []).append(int(entry))
    out, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            out.append(child)
            todo.append(child)
    return out


def kill_tree(grace_s: float = GRACE_S) -> None:
    """SIGTERM every descendant of the guard (its subreaper role keeps even re-parented ones in
    the tree), SIGKILL what is left after the grace period, and reap them."""
    me = os.getpid()
    for sig, wait in ((signal.SIGTERM, grace_s), (signal.SIGKILL, 2.0)):
        targets = descendants(me)
        if not targets:
            return
        for pid in targets:
            try:
                os.kill(pid, sig)
            except OSError:
                pass
        end = time.monotonic() + wait
        while time.monotonic() < end and descendants(me):
            _reap()
            time.sleep(POLL_S)
    _reap()


def _reap() -> None:
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def _counter(path: str, key: str) -> int | None:
    """The integer after ``key`` in a 'key value' per-line file, or None where it cannot be read."""
    try:
        with open(path) as f:
            for line in f:
                name, _, value = line.partition(" ")
                if name == key:
                    return int(value)
    except (OSError, ValueError):
        pass
    return None


def _memory_cgroup_files() -> list[str]:
    """This process's memory cgroup counter file(s): v2 memory.events, v1 memory.oom_control."""
    out = []
    try:
        with open("/proc/self/cgroup") as f:
            lines = f.read().splitlines()
    except OSError:
        return out
    for line in lines:
        _, controllers, path = line.split(":", 2)
        if controllers == "":   # the unified (v2) hierarchy
            out.append(f"/sys/fs/cgroup{path.rstrip('/')}/memory.events")
            out.append(f"/sys/fs/cgroup/unified{path.rstrip('/')}/memory.events")
        elif "memory" in controllers.split(","):
            out.append(f"/sys/fs/cgroup/memory{path.rstrip('/')}/memory.oom_control")
    return out


def oom_counts() -> dict[str, int | None]:
    """OOM kills so far: in this process's memory cgroup (None: no readable counter) and system-wide."""
    cgroup = [c for c in (_counter(p, "oom_kill") for p in _memory_cgroup_files()) if c is not None]
    return {"cgroup": sum(cgroup) if cgroup else None, "system": _counter("/proc/vmstat", "oom_kill")}


def write_report(path: str | None, before: dict[str, int | None]) -> None:
    """The tree's peak RSS and the OOM kills since ``before`` (None where a counter is missing)."""
    if not path:
        return
    after = oom_counts()
    deltas = {k: (after[k] - before[k]) if after[k] is not None and before[k] is not None else None
              for k in before}
    report = {"peak_rss_bytes": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024,
              "oom_kills": deltas}
    try:
        with open(path, "w") as f:
            json.dump(report, f)
    except OSError:
        pass


class _Stop(Exception):
    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def _on_signal(signum: int, frame: object) -> None:
    raise _Stop(signum)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="guard")
    ap.add_argument("--parent", type=int, required=True, help="the harness's pid")
    ap.add_argument("--deadline-s", type=float, required=True, help="seconds before the tree is killed")
    ap.add_argument("--report", help="write peak RSS and OOM-kill counts here as JSON at the end")
    ap.add_argument("cmd", nargs=argparse.REMAINDER)
    args = ap.parse_args(argv)
    cmd = args.cmd[1:] if args.cmd[:1] == ["--"] else args.cmd
    for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
        signal.signal(sig, _on_signal)
    _prctl(PR_SET_CHILD_SUBREAPER, 1)
    _prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    deadline = time.monotonic() + args.deadline_s
    before = oom_counts()
    try:
        return _supervise(cmd, args, deadline)
    finally:
        write_report(args.report, before)


def _supervise(cmd: list[str], args: argparse.Namespace, deadline: float) -> int:
    try:
        if os.getppid() != args.parent:   # the harness died before PDEATHSIG was armed
            return 128 + signal.SIGTERM
        proc = subprocess.Popen(cmd)
        while True:
            code = proc.poll()
            if code is not None:
                kill_tree()
                return code if code >= 0 else 128 - code
            if time.monotonic() > deadline:
                print(f"guard: timeout: the case ran past its {args.deadline_s:g} s deadline; "
                      "its processes were killed", file=sys.stderr, flush=True)
                kill_tree()
                return TIMEOUT_STATUS
            if os.getppid() != args.parent:
                kill_tree()
                return 128 + signal.SIGTERM
            time.sleep(POLL_S)
    except _Stop as stop:
        for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
            signal.signal(sig, signal.SIG_IGN)
        kill_tree()
        return 128 + stop.signum


if __name__ == "__main__":
    sys.exit(main())
