"""Running one case's processes with a wall-clock limit; a hang or crash costs only that case,
and nothing the case started outlives it or the harness (guard.py)."""
from __future__ import annotations

import os
import pathlib
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass

STDERR_TAIL_CHARS = 4000
GUARD = pathlib.Path(__file__).with_name("guard.py")
TIMEOUT_STATUS = 124   # guard.py's exit status when the deadline passed
_BACKSTOP_S = 15.0     # the parent's own limit beyond the guard's deadline


@dataclass
class ProcessResult:
    returncode: int | None
    timed_out: bool
    seconds: float
    output_tail: str


def guarded(argv: list[str], timeout_s: float) -> list[str]:
    """``argv`` under guard.py: killed with all its descendants at ``timeout_s`` or when this
    process dies."""
    return [sys.executable, str(GUARD), "--parent", str(os.getpid()), "--deadline-s", repr(float(timeout_s)),
            "--", *argv]


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
                cwd: str | None = None) -> ProcessResult:
    """Run ``argv`` under the guard in its own session; output goes to a temp file whose tail is
    returned. ``timed_out``: the guard killed the tree at ``timeout_s``."""
    with tempfile.TemporaryFile() as out:
        t0 = time.perf_counter()
        proc = subprocess.Popen(guarded(argv, timeout_s), env=env, cwd=cwd, stdin=subprocess.DEVNULL, stdout=out,
                                stderr=subprocess.STDOUT, start_new_session=True)
        backstop = False
        try:
            proc.wait(timeout=timeout_s + _BACKSTOP_S)
        except subprocess.TimeoutExpired:
            backstop = True
            _stop(proc)
        except BaseException:
            _stop(proc)  # Ctrl-C, SIGTERM or SIGHUP of the parent: take the tree down first
            raise
        seconds = time.perf_counter() - t0
        out.seek(max(0, out.seek(0, os.SEEK_END) - STDERR_TAIL_CHARS))
        tail = out.read().decode(errors="replace")
    timed_out = backstop or (proc.returncode == TIMEOUT_STATUS and seconds >= timeout_s)
    code = proc.returncode
    if code is not None and code > 128 and not timed_out:
        code = -(code - 128)    # the guard reports a signal as 128 + n; callers expect -n as Popen gives
    return ProcessResult(code, timed_out, seconds, tail)
