"""Running one child process with a wall-clock limit; a hang or crash costs only that case."""
from __future__ import annotations

import os
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass

STDERR_TAIL_CHARS = 4000


@dataclass
class ProcessResult:
    returncode: int | None
    timed_out: bool
    seconds: float
    output_tail: str


def _kill_group(proc: subprocess.Popen[bytes], grace_s: float = 3.0) -> None:
    """SIGTERM the whole process group (mpiexec and its ranks), then SIGKILL what is left."""
    for sig, wait in ((signal.SIGTERM, grace_s), (signal.SIGKILL, 10.0)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=wait)
            return
        except subprocess.TimeoutExpired:
            continue


def run_process(argv: list[str], env: dict[str, str], timeout_s: float,
                cwd: str | None = None) -> ProcessResult:
    """Run ``argv`` in its own session; output goes to a temp file whose tail is returned."""
    with tempfile.TemporaryFile() as out:
        t0 = time.perf_counter()
        proc = subprocess.Popen(argv, env=env, cwd=cwd, stdin=subprocess.DEVNULL, stdout=out,
                                stderr=subprocess.STDOUT, start_new_session=True)
        timed_out = False
        try:
            proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            timed_out = True
            _kill_group(proc)
        except BaseException:
            _kill_group(proc)  # Ctrl-C or a kill of the parent: take the children down too
            raise
        seconds = time.perf_counter() - t0
        out.seek(max(0, out.seek(0, os.SEEK_END) - STDERR_TAIL_CHARS))
        tail = out.read().decode(errors="replace")
    return ProcessResult(proc.returncode, timed_out, seconds, tail)
