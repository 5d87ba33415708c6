"""The results folder (``--out``) of a run: created and proved writable, locked against a
concurrent ``--resume``, and cleared of the work folders that killed runs left behind."""
from __future__ import annotations

import fcntl
import os
import pathlib
import shutil
from typing import IO

from harness.casefiles import CaseFiles
from harness.errors import UsageError
from harness.results.store import RESULTS_NAME

LOCK_NAME = ".harness.lock"
WORK_NAME = ".work"
RUN_LOCK_NAME = ".run.lock"


def prepare_out(out: str) -> pathlib.Path:
    """Create the results folder and prove the results file can be appended to (a regular file,
    or none yet)."""
    if not str(out).strip():
        raise UsageError("--out '': give a folder for the results (default: ./results)")
    path = pathlib.Path(out)
    from harness.results.store import regular_or_absent

    regular_or_absent(path / RESULTS_NAME)   # a FIFO there would hang the open below
    try:
        path.mkdir(parents=True, exist_ok=True)
        with open(path / RESULTS_NAME, "a"):
            pass
    except OSError as exc:
        raise UsageError(f"--out {out}: cannot write results there ({exc.strerror}); "
                         "choose a writable folder") from None
    return path


def lock_out(out: pathlib.Path, exclusive: bool) -> IO[str]:
    """Hold ``OUT/.harness.lock`` for the run: shared for a plain run, exclusive for ``--resume``
    (which decides what is missing from what is already there, so no other run may add records
    meanwhile). Refuses at once, with the reason, instead of waiting. Keep the handle open."""
    handle = open(out / LOCK_NAME, "a+")
    try:
        fcntl.flock(handle, (fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH) | fcntl.LOCK_NB)
    except OSError:
        handle.close()
        raise UsageError(f"--out {out}: another `harness run` is writing there"
                         f"{' (a --resume needs the folder to itself)' if exclusive else ' with --resume'}; "
                         "wait for it to finish, or choose another --out") from None
    return handle


def claim_work_dir(work: pathlib.Path) -> IO[str]:
    """Create this run's work folder and hold its lock for the run (so that the next run can tell
    a live run's folder from a dead one's)."""
    work.mkdir(parents=True, exist_ok=True)
    handle = open(work / RUN_LOCK_NAME, "a+")
    fcntl.flock(handle, fcntl.LOCK_EX)
    return handle


def remove_stale_work(out: pathlib.Path) -> int:
    """Remove the work folders of runs that are no longer alive (their lock is free or missing);
    return how many. Their cases' records keep the output tails."""
    root = out / WORK_NAME
    if not root.is_dir():
        return 0
    removed = 0
    for folder in root.iterdir():
        lock = folder / RUN_LOCK_NAME
        try:
            fd = os.open(lock, os.O_RDONLY) if lock.exists() else None
        except OSError:
            continue
        try:
            if fd is not None:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            continue     # a live run holds it
        finally:
            if fd is not None:
                os.close(fd)
        shutil.rmtree(folder, ignore_errors=True)
        removed += 1
    return removed


def finish_work(work: pathlib.Path) -> None:
    """Remove the work folders of ok cases (failed ones keep spec and error files for debugging
    until the next run), and the run's folder when nothing else is left."""
    if not work.is_dir():
        return
    for case_dir in work.iterdir():
        if case_dir.is_dir() and CaseFiles(case_dir).succeeded():
            shutil.rmtree(case_dir, ignore_errors=True)
    if all(p.name == RUN_LOCK_NAME for p in work.iterdir()):
        shutil.rmtree(work, ignore_errors=True)
    try:
        work.parent.rmdir()
    except OSError:
        pass
