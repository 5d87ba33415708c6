"""CUDA: NVIDIA GPUs driven by torch (cuBLAS/cuDNN) or TensorFlow."""
from __future__ import annotations

import ctypes
import glob
import importlib.util
import os
import shutil
import sys

from harness import Backend, Verification
from harness_plugins.backends import evidence


def cublas_version() -> dict[str, str] | None:
    """The cuBLAS this process loaded: its file (from /proc/self/maps) and the version the library
    itself reports (cublasGetProperty: major, minor, patch), or None when none is mapped."""
    try:
        with open("/proc/self/maps") as f:
            paths = sorted({ln.split()[-1] for ln in f if "libcublas.so" in ln and "/" in ln})
    except OSError:
        return None
    if not paths:
        return None
    try:
        lib = ctypes.CDLL(paths[0])
        parts = []
        for prop in (0, 1, 2):   # MAJOR_VERSION, MINOR_VERSION, PATCH_LEVEL
            value = ctypes.c_int()
            if lib.cublasGetProperty(prop, ctypes.byref(value)) != 0:
                raise OSError(f"cublasGetProperty({prop}) failed")
            parts.append(str(value.value))
        return {"file": paths[0], "version": ".".join(parts)}
    except (OSError, AttributeError) as exc:
        return {"file": paths[0], "version": f"unknown ({exc})"}


class CudaBackend(Backend):
    name = "cuda"
    description = "NVIDIA GPU through torch (cuBLAS, cuDNN) or TensorFlow"
    asynchronous = True   # kernels are queued: phases and repeats end with torch.cuda.synchronize()

    def synchronize(self) -> None:
        torch = sys.modules.get("torch")
        if torch is not None and torch.cuda.is_available() and torch.cuda.is_initialized():
            torch.cuda.synchronize()

    def available(self) -> tuple[bool, str]:
        if not glob.glob("/dev/nvidia[0-9]*") and shutil.which("nvidia-smi") is None:
            return False, "no NVIDIA GPU here (no /dev/nvidia*, no nvidia-smi): run on a GPU node"
        if importlib.util.find_spec("torch") is None and importlib.util.find_spec("tensorflow") is None:
            return False, "a GPU is present but neither torch nor tensorflow is installed: pip install 'hpml-harness[torch]'"
        return True, ""

    def frameworks(self) -> tuple[str, ...]:
        out = []
        if importlib.util.find_spec("torch") is not None:
            out.append("torch")
        if importlib.util.find_spec("tensorflow") is not None:
            out.append("tensorflow")
        return tuple(out)

    def environment(self, threads: int) -> dict[str, str]:
        return {"CUDA_VISIBLE_DEVICES": os.environ.get("CUDA_VISIBLE_DEVICES", "0")}

    def verify(self) -> Verification:
        ev = evidence.common()
        torch = sys.modules.get("torch")
        if torch is None:
            return Verification(ok=False, evidence=ev, reason="the workload did not use torch: nothing ran on CUDA")
        if not torch.cuda.is_available():
            return Verification(ok=False, evidence=ev, reason="torch.cuda.is_available() is False in the child")
        ev["cuda"] = {"torch_cuda": torch.version.cuda, "cudnn": torch.backends.cudnn.version(),
                      "device": torch.cuda.get_device_name(0), "capability": list(torch.cuda.get_device_capability(0)),
                      "max_memory_allocated": int(torch.cuda.max_memory_allocated()),
                      "cublas": cublas_version(),
                      "tf32_matmul": bool(torch.backends.cuda.matmul.allow_tf32)}
        if ev["cuda"]["max_memory_allocated"] <= 0:
            return Verification(ok=False, evidence=ev, reason="torch allocated nothing on the GPU: the workload's "
                                "tensors stayed on the CPU (does it move its model and batches to ctx.device?)")
        return Verification(ok=True, evidence=ev, library=f"CUDA {torch.version.cuda} on {ev['cuda']['device']}")
