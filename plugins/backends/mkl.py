"""Intel MKL: libmkl_rt from the ``mkl`` wheel (or MKLROOT), and the MKL inside torch's x86 wheel."""
from __future__ import annotations

import ctypes
import importlib.util
import os
import pathlib
import platform
import sys
from typing import Any

from harness_plugins.backends.cblas import Cblas
from harness_plugins.backends.library import BlasLibraryBackend


def find_mkl_rt() -> pathlib.Path | None:
    """libmkl_rt in the venv's lib/ (versioned names only, so find_library misses it) or MKLROOT."""
    dirs = [pathlib.Path(sys.prefix) / "lib"]
    if os.environ.get("MKLROOT"):
        dirs += [pathlib.Path(os.environ["MKLROOT"]) / "lib" / "intel64", pathlib.Path(os.environ["MKLROOT"]) / "lib"]
    for d in dirs:
        found = sorted(d.glob("libmkl_rt.so*"))
        if found:
            return found[0]
    return None


class MklBackend(BlasLibraryBackend):
    name = "mkl"
    description = "Intel oneMKL: libmkl_rt (pip install mkl) for blas; torch's built-in MKL for torch"
    library_env = "HARNESS_MKL_LIBRARY"
    marker = "mkl"
    install_hint = "no libmkl_rt found: pip install mkl (part of hpml-harness[all]), or set MKLROOT"

    def find(self) -> pathlib.Path | None:
        return find_mkl_rt()

    def available(self) -> tuple[bool, str]:
        ok, why = super().available()
        if ok or self._torch_has_mkl():
            return True, ""
        return False, why

    @staticmethod
    def _torch_has_mkl() -> bool:
        # x86_64 torch wheels link MKL statically; verify() checks it in the child.
        return platform.machine() == "x86_64" and importlib.util.find_spec("torch") is not None

    def frameworks(self) -> tuple[str, ...]:
        out = list(super().frameworks())
        if self._torch_has_mkl():
            out.append("torch")
        if platform.machine() == "x86_64" and importlib.util.find_spec("tensorflow") is not None:
            out.append("tensorflow")  # through oneDNN, switched on below
        return tuple(dict.fromkeys(out))

    def environment(self, threads: int) -> dict[str, str]:
        return {**super().environment(threads), "MKL_NUM_THREADS": str(threads),
                "MKL_THREADING_LAYER": os.environ.get("MKL_THREADING_LAYER", "GNU"),
                "TF_ENABLE_ONEDNN_OPTS": "1"}

    def binding(self, path: pathlib.Path) -> Cblas:
        return Cblas(str(path))

    def version(self, lib: Cblas) -> str | None:
        fn = lib.function("MKL_Get_Version_String")
        if fn is None:
            return None
        buf = ctypes.create_string_buffer(256)
        fn.restype = None
        fn.argtypes = [ctypes.c_char_p, ctypes.c_int]
        fn(buf, 256)
        return buf.value.decode(errors="replace").strip()

    def kernel(self, lib: Cblas) -> str | None:
        return None  # MKL has no public name for the code path it took; its non-Intel path is recorded in NOTES

    def extra_checks(self, ev: dict[str, Any]) -> tuple[list[str], list[str]]:
        problems: list[str] = []
        warnings: list[str] = []
        torch_lines = ev.get("torch_blas")
        if torch_lines is not None:
            if not any("mkl" in ln.lower() for ln in torch_lines if "BLAS" in ln):
                problems.append("torch is not built with MKL: " + "; ".join(torch_lines[:3]))
            else:
                ev["_framework_ok"] = True
                ev["_library"] = "mkl (inside torch): " + next((ln for ln in torch_lines if "BLAS_INFO" in ln or "MKL" in ln), "")
        tf = sys.modules.get("tensorflow")
        if tf is not None:
            try:  # TensorFlow's own answer: oneDNN built in and switched on for this process
                from tensorflow.python.util import _pywrap_util_port
                active = bool(_pywrap_util_port.IsMklEnabled())
            except Exception:  # noqa: BLE001 - a private module: absent in some builds
                active = None
            ev["tensorflow"] = {"version": tf.__version__, "onednn_active": active,
                                "TF_ENABLE_ONEDNN_OPTS": os.environ.get("TF_ENABLE_ONEDNN_OPTS")}
            if active is False or os.environ.get("TF_ENABLE_ONEDNN_OPTS") != "1":
                problems.append("TensorFlow ran with oneDNN switched off (TF_ENABLE_ONEDNN_OPTS="
                                f"{os.environ.get('TF_ENABLE_ONEDNN_OPTS')}, IsMklEnabled={active})")
            else:
                ev["_framework_ok"] = True
                ev["_library"] = f"oneDNN inside TensorFlow {tf.__version__}"
        foreign = [p["filepath"] for p in ev["threadpool_info"]
                   if p.get("user_api") == "blas" and p.get("internal_api") != "mkl"]
        if foreign:
            # Loaded (numpy's and scipy's own OpenBLAS are always there) but not what the
            # GEMM calls: the owner check above is the proof; this is recorded for the reader.
            warnings.append("other BLAS libraries are loaded in the process but not called: "
                            + ", ".join(pathlib.Path(f).name for f in foreign))
        return problems, warnings
