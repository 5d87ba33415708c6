"""OpenBLAS: numpy's bundled scipy-openblas (ILP64, prefixed symbols) or a libopenblas file."""
from __future__ import annotations

import importlib.util
import pathlib
import sys
from typing import Any

from harness_plugins.backends import evidence
from harness_plugins.backends.cblas import Cblas
from harness_plugins.backends.library import BlasLibraryBackend

SCIPY_PREFIX = ("scipy_cblas_dgemm64_", "scipy_cblas_sgemm64_", "scipy_openblas_get_config64_",
                "scipy_openblas_get_corename64_")


def numpy_openblas() -> pathlib.Path | None:
    spec = importlib.util.find_spec("numpy")
    if spec is None or not spec.submodule_search_locations:
        return None
    libs = pathlib.Path(next(iter(spec.submodule_search_locations))).parent / "numpy.libs"
    found = sorted(libs.glob("libscipy_openblas*.so*"))
    return found[0] if found else None


def system_openblas() -> pathlib.Path | None:
    """The distribution's OpenBLAS where numpy comes from the distribution (Debian, Ubuntu: numpy
    links libblas.so.3, an alternative that points into openblas-pthread/; PyPI has no numpy for
    ppc64le, so Power nodes often run this one). None where libblas is not OpenBLAS."""
    import sysconfig

    multiarch = sysconfig.get_config_var("MULTIARCH") or ""
    for folder in (pathlib.Path("/usr/lib") / multiarch, pathlib.Path("/usr/lib64"), pathlib.Path("/usr/lib")):
        for name in ("libblas.so.3", "libopenblas.so.0"):
            candidate = folder / name
            real = candidate.resolve()
            if candidate.exists() and "openblas" in str(real).lower():
                # Debian's openblas-pthread/libblas.so.3 is a thin front for libopenblasp-r*.so in the
                # same folder: the library itself is what runs (and what threadpoolctl and dladdr name).
                inner = sorted(p.resolve() for p in real.parent.glob("libopenblas*.so*") if p.resolve().is_file())
                return inner[0] if inner else real
    return None


def numpy_blas() -> pathlib.Path | None:
    """The OpenBLAS numpy itself calls: its wheel's bundled one, else the distribution's."""
    return numpy_openblas() or system_openblas()


class OpenblasBackend(BlasLibraryBackend):
    name = "openblas"
    description = "OpenBLAS: the one numpy's wheel carries, or OPENBLAS_LIBRARY=/path/libopenblas.so"
    library_env = "HARNESS_OPENBLAS_LIBRARY"
    marker = "openblas"
    install_hint = "no OpenBLAS found: pip install numpy (its wheel carries OpenBLAS) or set HARNESS_OPENBLAS_LIBRARY"

    def find(self) -> pathlib.Path | None:
        return numpy_blas()

    def frameworks(self) -> tuple[str, ...]:
        path = self.library_path()
        if path is None:
            return ()
        # numpy is driven when numpy's own BLAS is this OpenBLAS file, or through FlexiBLAS.
        numpy = path == numpy_blas() or self.flexiblas_name() is not None
        return ("numpy", "blas") if numpy else ("blas",)

    def _symbols(self, lib: Cblas) -> tuple[str, str, str, str]:
        return SCIPY_PREFIX if lib.function(SCIPY_PREFIX[0]) else (
            "cblas_dgemm", "cblas_sgemm", "openblas_get_config", "openblas_get_corename")

    def binding(self, path: pathlib.Path) -> Cblas:
        import ctypes
        probe = ctypes.CDLL(str(path), mode=ctypes.RTLD_LOCAL)
        if hasattr(probe, SCIPY_PREFIX[0]):
            return Cblas(str(path), SCIPY_PREFIX[0], SCIPY_PREFIX[1], ilp64=True)
        return Cblas(str(path), ilp64="64_" in path.name)

    def version(self, lib: Cblas) -> str | None:
        return lib.call_string(self._symbols(lib)[2])

    def kernel(self, lib: Cblas) -> str | None:
        return lib.call_string(self._symbols(lib)[3])

    def extra_checks(self, ev: dict[str, Any]) -> tuple[list[str], list[str]]:
        pools = ev["threadpool_info"]
        problems, warnings = [], []
        foreign = [p for p in pools if p.get("user_api") == "blas" and p.get("internal_api") != "openblas"]
        numpy_lib = numpy_blas()
        if "numpy" in sys.modules and numpy_lib is not None:
            numpy_pool = [p for p in pools if pathlib.Path(p.get("filepath", "")).resolve() == numpy_lib.resolve()]
            if not numpy_pool:
                problems.append(f"numpy is imported but its OpenBLAS ({numpy_lib.name}) is not loaded")
            elif foreign and any(p["internal_api"] == "mkl" for p in foreign):
                # MKL makes its symbols global once called: numpy's calls may bind to it.
                problems.append("MKL is loaded in the same process: numpy's BLAS calls may go to MKL")
            else:
                ev["_framework_ok"] = True
                ev["_library"] = f"openblas {numpy_pool[0].get('version')} ({numpy_lib})"
        if foreign:
            warnings.append("other BLAS libraries are loaded: "
                            + ", ".join(f"{p['internal_api']} ({pathlib.Path(p['filepath']).name})" for p in foreign))
        for p in pools:
            if p.get("internal_api") == "openblas":
                warnings += evidence.kernel_warning(p.get("architecture"), "openblas")
        return problems, sorted(set(warnings))
