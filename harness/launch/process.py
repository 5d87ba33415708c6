"""Running one case's processes with a wall-clock limit; a hang or crash costs only that case,
and nothing the case started outlives it or the harness (process_guard.py)."""
from __future__ import annotations

import json
import os
import pathlib
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

STDERR_TAIL_CHARS = 4000
GUARD = pathlib.Path(__file__).with_name("process_guard.py")
TIMEOUT_STATUS = 124   # process_guard.py's exit status when the deadline passed
_BACKSTOP_S = 15.0     # the parent's own limit beyond the guard's deadline
_TICK_S = 1.0          # how often on_tick is called while a case runs


@dataclass
class ProcessResult:
    returncode: int | None
    timed_out: bool
    seconds: float
    output_tail: str
    tree: dict[str, Any] = field(default_factory=dict)   # process_guard.py's report: peak_rss_bytes, oom_kills

    @property
    def oom_killed(self) -> str:
        """Why this looks like an out-of-memory kill ('' when it does not): the OOM killer acted in
        the case's memory cgroup, or on the machine, while the case ran, and the case died of it."""
        if self.returncode == 0 or self.timed_out:
            return ""
        kills = self.tree.get("oom_kills") or {}
        rss = self.tree.get("peak_rss_bytes")
        peak = f"; peak RSS of its processes {rss / 2**20:.0f} MiB" if rss else ""
        if kills.get("cgroup"):
            return f"killed by the kernel's OOM killer: out of memory in its cgroup ({kills['cgroup']} kill(s){peak})"
        if kills.get("system"):
            return (f"killed, and the kernel's OOM killer killed {kills['system']} process(es) on this machine "
                    f"while it ran: most likely out of memory{peak}")
        return ""


def guarded(argv: list[str], timeout_s: float, report: str | None = None) -> list[str]:
    """``argv`` under process_guard.py: killed with all its descendants at ``timeout_s`` or when this
    process dies; with ``report``, the guard writes the tree's peak RSS and OOM kills there."""
    extra = ["--report", report] if report else []
    return [sys.executable, str(GUARD), "--parent", str(os.getpid()), "--deadline-s", repr(float(timeout_s)),
            *extra, "--", *argv]


def _stop(proc: subprocess.Popen[bytes], grace_s: float = 8.0) -> None:
    """Ask the guard to end the tree (SIGTERM), then SIGKILL its group if it does not."""
    for sig, wait in ((signal.SIGTERM, grace_s), (signal.SIGKILL, 5.0)):
        try:
            if sig == signal.SIGKILL:
                os.killpg(proc.pid, sig)
            else:
                proc.send_signal(sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=wait)
            return
        except subprocess.TimeoutExpired:
            continue


def run_process(argv: list[str], env: dict[str, str], timeout_s: float,
                cwd: str | None = None, on_tick: Callable[[], None] | None = None) -> ProcessResult:
    """Run ``argv`` under the guard in its own session; output goes to a temp file whose tail is
    returned. ``timed_out``: the guard killed the tree at ``timeout_s``. ``on_tick`` is called about
    once a second while it runs (progress display); what it raises is the caller's."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryDirectory(prefix="harness-guard-") as tmp:
        report = os.path.join(tmp, "guard.json")
        t0 = time.perf_counter()
        proc = subprocess.Popen(guarded(argv, timeout_s, report), env=env, cwd=cwd, stdin=subprocess.DEVNULL, stdout=out,
                                stderr=subprocess.STDOUT, start_new_session=True)
        backstop = False
        limit = t0 + timeout_s + _BACKSTOP_S
        try:
            while True:
                try:
                    proc.wait(timeout=max(0.0, min(_TICK_S, limit - time.perf_counter())))
                    break
                except subprocess.TimeoutExpired:
                    if time.perf_counter() >= limit:
                        raise
                if on_tick is not None:
                    on_tick()
        except subprocess.TimeoutExpired:
            backstop = True
            _stop(proc)
        except BaseException:
            _stop(proc)  # Ctrl-C, SIGTERM or SIGHUP of the parent: take the tree down first
            raise
        seconds = time.perf_counter() - t0
        out.seek(max(0, out.seek(0, os.SEEK_END) - STDERR_TAIL_CHARS))
        tail = out.read().decode(errors="replace")
        tree = _read_report(report)
    timed_out = backstop or (proc.returncode == TIMEOUT_STATUS and seconds >= timeout_s)
    code = proc.returncode
    if code is not None and code > 128 and not timed_out:
        code = -(code - 128)    # the guard reports a signal as 128 + n; callers expect -n as Popen gives
    return ProcessResult(code, timed_out, seconds, tail, tree)


def _read_report(path: str) -> dict[str, Any]:
    try:
        with open(path) as f:
            data = json.load(f)
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}
