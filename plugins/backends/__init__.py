"""Built-in backend plugins: openblas, mkl, blis, armpl, cuda.

Each says whether it is usable here and why not, which frameworks it can drive in this
install, the child environment it needs, and verifies in the child with evidence (the
file its GEMM symbol really lives in, the library's own version call, threadpoolctl,
numpy/torch build config, /proc/self/maps) that it is the library that ran.
"""
from __future__ import annotations

from harness import Backend, hookimpl
from harness_plugins.backends.armpl import ArmplBackend
from harness_plugins.backends.blis import BlisBackend
from harness_plugins.backends.cuda import CudaBackend
from harness_plugins.backends.mkl import MklBackend
from harness_plugins.backends.openblas import OpenblasBackend


@hookimpl
def harness_backends() -> list[Backend]:
    return [OpenblasBackend(), MklBackend(), BlisBackend(), ArmplBackend(), CudaBackend()]
