"""A CBLAS library called directly through ctypes, and proof of which file a symbol lives in.

Every backend's ``blas`` binding is a :class:`Cblas`: the GEMM it calls is looked up in
one named library file, and ``owner()`` asks the dynamic linker (``dladdr``) which file the
function pointer really belongs to, so the evidence is about the code that ran.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import pathlib
from dataclasses import dataclass
from typing import Any

import numpy as np

ROW_MAJOR, NO_TRANS = 101, 111
BLAS_NAMES = ("blas", "openblas", "mkl", "blis", "armpl", "flexiblas", "gotoblas", "atlas", "cublas",
              "libtorch_cpu")


class _DlInfo(ctypes.Structure):
    _fields_ = [("dli_fname", ctypes.c_char_p), ("dli_fbase", ctypes.c_void_p),
                ("dli_sname", ctypes.c_char_p), ("dli_saddr", ctypes.c_void_p)]


_libdl = ctypes.CDLL(ctypes.util.find_library("dl") or None)
_libdl.dladdr.argtypes = [ctypes.c_void_p, ctypes.POINTER(_DlInfo)]


def symbol_owner(address: int) -> dict[str, Any]:
    """The library file and symbol name the dynamic linker gives for a code address."""
    info = _DlInfo()
    if not address or not _libdl.dladdr(ctypes.c_void_p(address), ctypes.byref(info)):
        return {"file": None, "symbol": None}
    return {"file": info.dli_fname.decode() if info.dli_fname else None,
            "symbol": info.dli_sname.decode() if info.dli_sname else None}


def global_symbol_owner(name: str = "dgemm_") -> dict[str, Any]:
    """Who provides the process-global ``name`` (what a library linked later would bind to)."""
    try:
        fn = getattr(ctypes.CDLL(None), name)
    except AttributeError:
        return {"symbol": name, "file": None, "note": "no global definition in this process"}
    owner = symbol_owner(ctypes.cast(fn, ctypes.c_void_p).value or 0)
    return {"symbol": name, **owner}


def blas_maps() -> list[str]:
    """Library files in /proc/self/maps whose names look like a BLAS."""
    try:
        lines = pathlib.Path("/proc/self/maps").read_text().splitlines()
    except OSError:
        return []
    files = {ln.split()[-1] for ln in lines if "/" in ln}
    return sorted(f for f in files if any(n in pathlib.Path(f).name.lower() for n in BLAS_NAMES))


@dataclass
class Cblas:
    """``cblas_?gemm`` of one library file. ``ilp64``: 64-bit integers (e.g. scipy-openblas64)."""

    path: str
    dgemm_symbol: str = "cblas_dgemm"
    sgemm_symbol: str = "cblas_sgemm"
    ilp64: bool = False

    def __post_init__(self) -> None:
        self.lib = ctypes.CDLL(self.path, mode=ctypes.RTLD_LOCAL)
        int_t = ctypes.c_int64 if self.ilp64 else ctypes.c_int
        ptr = ctypes.c_void_p
        for attr, sym, real in (("_dgemm", self.dgemm_symbol, ctypes.c_double),
                                ("_sgemm", self.sgemm_symbol, ctypes.c_float)):
            try:
                fn = getattr(self.lib, sym)
            except AttributeError:
                raise RuntimeError(f"{self.path} has no {sym}: it is not the CBLAS library this "
                                   "backend expects (check the HARNESS_*_LIBRARY variable)") from None
            fn.restype = None
            fn.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int, int_t, int_t, int_t, real, ptr,
                           int_t, ptr, int_t, real, ptr, int_t]
            setattr(self, attr, fn)

    def function(self, name: str) -> Any | None:
        try:
            return getattr(self.lib, name)
        except AttributeError:
            return None

    def gemm(self, a: np.ndarray, b: np.ndarray, c: np.ndarray) -> None:
        """c = a @ b for C-contiguous float64 or float32 matrices, through this library."""
        m, k = a.shape
        n = b.shape[1]
        fn = self._dgemm if a.dtype == np.float64 else self._sgemm
        fn(ROW_MAJOR, NO_TRANS, NO_TRANS, m, n, k, 1.0, a.ctypes.data, k, b.ctypes.data, n, 0.0,
           c.ctypes.data, n)

    def owner(self) -> dict[str, Any]:
        """Which file the dgemm we call really lives in."""
        return symbol_owner(ctypes.cast(self._dgemm, ctypes.c_void_p).value or 0)

    def call_string(self, name: str, *args: Any) -> str | None:
        """Call a ``const char *f(void)`` version function, if the library has it."""
        fn = self.function(name)
        if fn is None:
            return None
        fn.restype = ctypes.c_char_p
        fn.argtypes = []
        out = fn(*args)
        return out.decode(errors="replace").strip() if out else None
