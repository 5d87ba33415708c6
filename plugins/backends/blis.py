"""BLIS: a libblis with the CBLAS layer (Debian's libblis4-pthread, or HARNESS_BLIS_LIBRARY)."""
from __future__ import annotations

import ctypes
import ctypes.util
import pathlib

from harness_plugins.backends.cblas import Cblas
from harness_plugins.backends.library import BlasLibraryBackend

SEARCH = ("/usr/lib/x86_64-linux-gnu/libblis.so.4", "/usr/lib/aarch64-linux-gnu/libblis.so.4",
          "/usr/lib/powerpc64le-linux-gnu/libblis.so.4", "/usr/lib64/libblis.so.4", "/usr/local/lib/libblis.so")


class BlisBackend(BlasLibraryBackend):
    name = "blis"
    description = "BLIS (flame/blis) through its CBLAS layer"
    library_env = "HARNESS_BLIS_LIBRARY"
    marker = "blis"
    install_hint = ("no BLIS library with a C API found: apt-get install libblis4-pthread (Debian/Ubuntu) "
                    "or set HARNESS_BLIS_LIBRARY=/path/libblis.so (the PyPI 'blis' package has no C API)")

    def find(self) -> pathlib.Path | None:
        for path in SEARCH:
            if pathlib.Path(path).is_file():
                return pathlib.Path(path)
        found = ctypes.util.find_library("blis")
        return pathlib.Path(found) if found and pathlib.Path(found).is_absolute() else None

    def binding(self, path: pathlib.Path) -> Cblas:
        probe = ctypes.CDLL(str(path), mode=ctypes.RTLD_LOCAL)
        ilp64 = False
        if hasattr(probe, "bli_info_get_blas_int_type_size"):
            probe.bli_info_get_blas_int_type_size.restype = ctypes.c_int64
            ilp64 = probe.bli_info_get_blas_int_type_size() == 64
        return Cblas(str(path), ilp64=ilp64)

    def version(self, lib: Cblas) -> str | None:
        return lib.call_string("bli_info_get_version_str")

    def kernel(self, lib: Cblas) -> str | None:
        query, name = lib.function("bli_arch_query_id"), lib.function("bli_arch_string")
        if query is None or name is None:
            return None
        query.restype = ctypes.c_int
        name.restype = ctypes.c_char_p
        name.argtypes = [ctypes.c_int]
        out = name(query())
        return out.decode() if out else None
