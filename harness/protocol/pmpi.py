"""The C-level profiling hook for MPI_Allreduce: build once, load before mpi4py.MPI, read.

A Python wrapper around ``comm.Allreduce`` costs about 0.5 us per call, 20 % of an 8-byte
Allreduce on one node. ``pmpi_hook.c`` interposes ``MPI_Allreduce`` (and MPI-4's
``MPI_Allreduce_c``) through the standard PMPI interface instead and counts calls, bytes
and nanoseconds in C. The parent builds it with the ``mpicc`` of the MPI library mpi4py
uses (cached per source and compiler) and proves it once per run in a throw-away process;
each worker loads it with ``mpi4py.profile`` before importing ``mpi4py.MPI`` and proves it
is in the call path with one Allreduce on COMM_SELF. Where any step fails the Python
wrapper is used and the record says why.

Set ``HARNESS_PMPI=0`` to turn the hook off.
"""
from __future__ import annotations

import ctypes
import hashlib
import os
import pathlib
import shutil
import subprocess
import sys
import uuid
from typing import Any

from harness.cache import cache_dir

SOURCE = pathlib.Path(__file__).with_name("pmpi_hook.c")
LIBRARY_NAME = "libhpml_pmpi.so"
COUNTERS_SYMBOL = "hpml_allreduce"
ENABLED_SYMBOL = "hpml_pmpi_enabled"


def find_mpicc() -> str | None:
    """The MPI C compiler wrapper that matches mpi4py: $MPICC, the venv's, mpi4py's, PATH's."""
    candidates = [os.environ.get("MPICC"), str(pathlib.Path(sys.executable).with_name("mpicc"))]
    try:
        import mpi4py
        candidates.append(mpi4py.get_config().get("mpicc"))
    except ImportError:
        return None
    candidates.append(shutil.which("mpicc"))
    for c in candidates:
        if c and os.access(c, os.X_OK):
            return c
    return None


def build_hook(out_dir: pathlib.Path | None = None) -> tuple[pathlib.Path | None, str]:
    """(path to the compiled hook, "") or (None, why not). Compiles at most once per
    source and compiler; concurrent builders each write a temporary file and rename it."""
    if os.environ.get("HARNESS_PMPI", "1") == "0":
        return None, "HARNESS_PMPI=0"
    if sys.platform != "linux":
        return None, f"the PMPI hook is built for Linux only (this is {sys.platform})"
    mpicc = find_mpicc()
    if mpicc is None:
        return None, "no mpicc found beside the Python interpreter, in mpi4py's config or on PATH"
    key = hashlib.sha256(SOURCE.read_bytes() + os.path.realpath(mpicc).encode()
                         + str(os.stat(mpicc).st_mtime_ns).encode()).hexdigest()[:16]
    target = (out_dir or cache_dir() / "pmpi") / key / LIBRARY_NAME
    if target.is_file():
        return target, ""
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_name(f".{uuid.uuid4().hex}.so")
        proc = subprocess.run([mpicc, "-O2", "-shared", "-fPIC", "-o", str(tmp), str(SOURCE)],
                              capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return None, f"building the PMPI hook failed: {exc}"
    if proc.returncode != 0:
        tmp.unlink(missing_ok=True)
        last = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["no output"]
        return None, f"{mpicc} could not build the PMPI hook: {last[0]}"
    os.replace(tmp, target)
    return target, ""


_PROBE = """
import sys
from harness.protocol.pmpi import attach_hook, load_hook
path = sys.argv[1]
why = load_hook(path) if path else ""
from mpi4py import MPI
if path and not why:
    why = attach_hook(path, MPI)[1]
print("PMPI-PROBE:" + (why or "ok") + "|" + MPI.Get_library_version().replace("\\0", "").strip().splitlines()[0])
"""


def _run_probe(path: str) -> tuple[str, str]:
    """(status, MPI library) from a throw-away singleton process, with the hook or without."""
    try:
        proc = subprocess.run([sys.executable, "-c", _PROBE, path], capture_output=True, text=True,
                              timeout=120, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"the PMPI hook probe did not finish: {exc}", ""
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("PMPI-PROBE:")]
    if proc.returncode != 0 or not lines:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["no output"]
        return f"probe exited {proc.returncode}: {tail[0][:200]}", ""
    status, _, library = lines[-1].removeprefix("PMPI-PROBE:").partition("|")
    return status, library


def probe_hook(path: pathlib.Path) -> str:
    """"" when the hook works with the MPI library mpi4py loads anyway, else why not.

    The hook links the MPI of the mpicc that built it. If that is another MPI than the one
    mpi4py would load, loading the hook first can switch mpi4py to it (cases then fail under
    the other MPI's mpiexec) or put two MPIs in one process. So once per ``harness run`` two
    throw-away singleton processes report their MPI library, with and without the hook."""
    status, with_hook = _run_probe(str(path))
    if status != "ok":
        return f"the PMPI hook built with {find_mpicc()} does not work here ({status})"
    status, without = _run_probe("")
    if status != "ok":
        return f"mpi4py does not start without the PMPI hook ({status})"
    if with_hook != without:
        return (f"the PMPI hook built with {find_mpicc()} links {with_hook!r}, but mpi4py loads "
                f"{without!r}: set MPICC to that MPI's mpicc")
    return ""


# What decides which MPI library mpi4py loads, besides the installed files.
_MPI_SELECTION_ENV = ("MPI4PY_LIBMPI", "MPI4PY_MPIABI", "LD_LIBRARY_PATH", "LD_PRELOAD", "I_MPI_ROOT")


def _probe_key(path: pathlib.Path) -> str:
    """The probe's verdict holds while the hook, mpi4py's extension modules, the Python and
    the variables that steer mpi4py's library choice stay the same."""
    import importlib.util

    spec = importlib.util.find_spec("mpi4py")
    parts = [str(path), str(path.stat().st_mtime_ns), sys.executable]
    if spec and spec.submodule_search_locations:
        for f in sorted(pathlib.Path(next(iter(spec.submodule_search_locations))).glob("MPI*.so")):
            parts.append(f"{f.name}:{f.stat().st_mtime_ns}")
    parts += [f"{k}={os.environ.get(k, '')}" for k in _MPI_SELECTION_ENV]
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:16]


def ready_hook(out_dir: pathlib.Path | None = None) -> tuple[pathlib.Path | None, str]:
    """The hook a run can hand to its cases: built, and proved by the probe (whose verdict is
    cached beside the library, so a run pays the two probe processes once)."""
    path, why = build_hook(out_dir)
    if path is None:
        return None, why
    verdict = path.with_name(f"probe-{_probe_key(path)}.txt")
    try:
        why = verdict.read_text()
    except OSError:
        why = probe_hook(path)
        try:
            tmp = verdict.with_name(f".{uuid.uuid4().hex}.txt")
            tmp.write_text(why)
            os.replace(tmp, verdict)
        except OSError:
            pass
    return (None, why) if why else (path, "")


def load_hook(path: str | None) -> str:
    """Put the hook in front of libmpi; call before ``from mpi4py import MPI``. "" or why not."""
    if not path:
        return "no PMPI hook was built"
    if "mpi4py.MPI" in sys.modules:
        return "mpi4py.MPI was imported before the PMPI hook could be loaded"
    import warnings

    try:
        import mpi4py
        with warnings.catch_warnings(record=True) as caught:  # a failed dlopen is only a warning
            warnings.simplefilter("always")
            mpi4py.profile(path)
    except (ImportError, ValueError, OSError) as exc:
        return f"loading the PMPI hook failed: {exc}"
    if caught:
        return f"loading the PMPI hook failed: {caught[0].message}"
    return ""


class AllreduceHook:
    """The hook's counters in this process: [calls, bytes, nanoseconds], only growing."""

    def __init__(self, library: ctypes.CDLL) -> None:
        self.counters = (ctypes.c_longlong * 3).in_dll(library, COUNTERS_SYMBOL)
        self._enabled = ctypes.c_int.in_dll(library, ENABLED_SYMBOL)

    def snapshot(self) -> tuple[int, int, int]:
        c = self.counters
        return c[0], c[1], c[2]

    def set_enabled(self, on: bool) -> None:
        """Off makes MPI_Allreduce a plain pass-through (for the overhead benchmark)."""
        self._enabled.value = 1 if on else 0


def attach_hook(path: str | None, mpi: Any) -> tuple[AllreduceHook | None, str]:
    """After ``mpi4py.MPI`` is imported: the hook if an Allreduce on COMM_SELF reaches it."""
    if not path:
        return None, "no PMPI hook was built"
    try:
        hook = AllreduceHook(ctypes.CDLL(path))
    except (OSError, ValueError) as exc:
        return None, f"the PMPI hook's counters are not readable: {exc}"
    import array
    before = hook.snapshot()[0]
    mpi.COMM_SELF.Allreduce(array.array("d", [0.0]), array.array("d", [0.0]))
    if hook.snapshot()[0] != before + 1:
        return None, "mpi4py's Allreduce does not reach the PMPI hook (another MPI library is in use?)"
    return hook, ""
