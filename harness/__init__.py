"""hpml-harness: one timing and communication-profiling protocol for HPML workloads.

Everything a plugin needs is importable from here (the contract; nothing under ``harness.*``
submodules is needed, and those may change)::

    from harness import hookimpl, Workload, Param, Claim, Control, RunContext, UsageError

- ``Workload``, ``Param`` (int, float, str, bool, or ``list`` with ``item=``), ``Claim`` and its
  ``Control``: what a workload declares. ``RunContext``: what ``setup``/``run`` receive.
- ``Backend``, ``Verification``: what a compute-library backend declares and proves.
- ``UsageError`` (bad input: exit status 2, one line) and ``did_you_mean`` (an error suggesting the
  closest known names), for ``check_params``.
- ``pyplot``, ``save_figure``, ``draw_rooflines``: matplotlib on the Agg backend, figures closed.
- ``hardware_profiles``: the registered hardware profiles' data by name.
- ``split_list``, ``parse_int_list``: the list syntax of the command line (``1:2:4``).
- ``hookimpl``: the marker of the hooks in ``harness.hookspecs`` (see that module's docs).
"""
from __future__ import annotations

from harness.backend import Backend, Verification
from harness.claims import Claim, ClaimVerdict, Control
from harness.errors import UsageError, did_you_mean
from harness.hardware.profiles import hardware_profiles
from harness.hookspecs import hookimpl
from harness.params import Param, parse_int_list, split_list
from harness.plotting import draw_rooflines, pyplot, save_figure
from harness.protocol.context import RunContext
from harness.workload import Workload

__version__ = "0.1.0"

__all__ = ["hookimpl", "Workload", "Param", "Claim", "Control", "ClaimVerdict", "RunContext", "Backend",
           "Verification", "UsageError", "did_you_mean", "hardware_profiles", "pyplot", "save_figure",
           "draw_rooflines", "split_list", "parse_int_list", "__version__"]
