"""The guard between ``harness run`` and a case's processes, so that nothing outlives its run.

``python guard.py --parent PID --deadline-s T -- ARGV...`` (run as a script: it imports nothing
from the harness, so it starts in milliseconds) starts ARGV in the guard's own process group and
session, and is a child subreaper (Linux ``PR_SET_CHILD_SUBREAPER``): a descendant that double-forks
or starts its own session is re-parented to the guard, not to init, so it stays in the tree the
guard kills. The guard ends the whole tree (SIGTERM, a grace period, SIGKILL) when

- ARGV's main process has exited (leftover grandchildren do not survive the case),
- its own deadline passes (exit status 124, "timeout" on stderr): the timeout holds even when
  the harness itself was killed,
- the harness dies (``PR_SET_PDEATHSIG`` delivers SIGTERM; a poll of the parent pid backs it up), or
- it receives SIGTERM, SIGHUP or SIGINT.

Otherwise it exits with ARGV's exit status (a signal as 128 + its number).
"""
from __future__ import annotations

import argparse
import ctypes
import os
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
    ap.add_argument("cmd", nargs=argparse.REMAINDER)
    args = ap.parse_args(argv)
    cmd = args.cmd[1:] if args.cmd[:1] == ["--"] else args.cmd
    for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
        signal.signal(sig, _on_signal)
    _prctl(PR_SET_CHILD_SUBREAPER, 1)
    _prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    deadline = time.monotonic() + args.deadline_s
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
