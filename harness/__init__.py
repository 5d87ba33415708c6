"""hpml-harness: one timing and communication-profiling protocol for HPML workloads.

Everything a plugin author needs is importable from here::

    from harness import hookimpl, Workload, Backend, Param, Claim
"""
from __future__ import annotations

from harness.backend import Backend, Verification
from harness.hookspecs import hookimpl
from harness.params import Param
from harness.claims import Claim, Control
from harness.workload import Workload

__version__ = "0.1.0"

__all__ = ["hookimpl", "Workload", "Backend", "Verification", "Param", "Claim", "Control", "__version__"]
