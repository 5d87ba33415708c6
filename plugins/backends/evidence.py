"""Evidence every backend records in the child: what the process really loaded."""
from __future__ import annotations

import sys
from typing import Any

from harness_plugins.backends.cblas import blas_maps, global_symbol_owner


def threadpools() -> list[dict[str, Any]]:
    try:
        import threadpoolctl
    except ImportError:
        return []
    return threadpoolctl.threadpool_info()


def numpy_blas() -> dict[str, Any] | None:
    """numpy's build-time BLAS/LAPACK (only if the workload imported numpy)."""
    np = sys.modules.get("numpy")
    if np is None:
        return None
    try:
        cfg = np.show_config(mode="dicts")
        return cfg.get("Build Dependencies", {})
    except Exception as exc:  # noqa: BLE001 - older numpy
        return {"error": repr(exc)}


def torch_blas() -> list[str] | None:
    """The BLAS lines of torch.__config__.show() (only if the workload imported torch)."""
    torch = sys.modules.get("torch")
    if torch is None:
        return None
    text = torch.__config__.show()
    return [ln.strip() for ln in text.splitlines() if any(k in ln for k in ("BLAS", "MKL", "LAPACK", "oneDNN"))]


def common() -> dict[str, Any]:
    return {
        "threadpool_info": threadpools(),
        "numpy_build_blas": numpy_blas(),
        "torch_blas": torch_blas(),
        "global_dgemm_": global_symbol_owner("dgemm_"),
        "proc_maps_blas": blas_maps(),
    }


def kernel_warning(arch: str | None, library: str) -> list[str]:
    """Warn when a library chose kernels below what the CPU can do (recorded with every number)."""
    from harness import fingerprint

    flags = set(fingerprint()["cpu"]["flags"])
    if not arch:
        return []
    low = arch.lower()
    if "avx512f" in flags and low in ("haswell", "zen", "sandybridge", "nehalem", "prescott", "core2"):
        return [f"{library} runs {arch} kernels on an AVX-512 CPU (OPENBLAS_CORETYPE or CPU dispatch): "
                "numbers are below what SkylakeX kernels give"]
    if low in ("generic", "none"):
        return [f"{library} runs generic (unoptimised) kernels on this CPU"]
    return []
