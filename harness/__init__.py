"""hpml-harness: one timing and communication-profiling protocol for HPML workloads.

Everything a plugin needs is importable from here (the contract; nothing under ``harness.*``
submodules is needed, and those may change: tests/test_plugin_api.py fails when a built-in plugin
imports one)::

    from harness import hookimpl, Workload, Param, Claim, Control, Premise, RunContext, UsageError

- ``Workload``, ``Param`` (int, float, str, bool, or ``list`` with ``item=``), ``Claim`` and its
  ``Control``, ``Premise`` and ``QualityGuard``: what a workload declares. ``RunContext``: what ``setup``/``run`` receive.
- ``Backend``, ``Verification``: what a compute-library backend declares and proves.
- ``Record``: a stored result (what ``harness.results`` readers return); ``ClaimVerdict``: one
  claim judged on a record. Hooks receive the stored line as a dict (see docs/plugins.md).
- ``UsageError`` (bad input: exit status 2, one line) and ``did_you_mean`` (an error suggesting the
  closest known names), for ``check_params``.
- ``pyplot``, ``save_figure``, ``draw_rooflines``, ``plain_log_ticks``: matplotlib on the Agg backend,
  figures closed, log axes labelled in plain numbers.
- ``hardware_profiles``: the registered hardware profiles' data by name.
- ``split_list``, ``parse_int_list``: the list syntax of the command line (``1:2:4``).
- ``hookimpl``: the marker of the hooks in ``harness.hookspecs`` (see that module's docs).
- ``QualityRule``, ``QualityTracker``, ``quality_params``: when a training has reached quality (its
  target or a plateau) or stopped on its budget, and the params that set it.
- ``training_log``, ``TrainingLog``, ``logs_location``: the MLPerf-style log of each training.
- ``fingerprint`` (the machine as a record fragment) and ``fraction_or_problem`` (a measured figure
  as a fraction of a peak, or why the peak cannot be right).
- ``torch_flops``: one step's floating-point operations as torch's flop counter counts them, for
  ``RunContext.count_work`` (a compute phase placed on the machine's roofline).
- ``run_once`` (also ``harness.testing.run_once``): a workload's repeats in-process, for a plugin's
  unit tests; ``judge_once`` and ``judge_control_once``: its claims judged so, on the case and on
  a claim's control.

Names are imported on first use (PEP 562), so ``import harness`` costs next to nothing: the
command line and a worker load only what they touch, and pandas only when a DataFrame is asked for.
"""
from __future__ import annotations

import importlib
import os as _os
from typing import TYPE_CHECKING, Any

# The variables the harness's process started with, before any library it imports could add some
# (see harness.software.inherited_environment).
_STARTING_ENVIRONMENT = frozenset(_os.environ)

__version__ = "0.1.0"

#: public name -> the module that defines it
_EXPORTS = {
    "hookimpl": "harness.hookspecs", "Workload": "harness.workload", "Param": "harness.params",
    "Claim": "harness.judging.claims", "Control": "harness.judging.claims", "Premise": "harness.judging.claims", "QualityGuard": "harness.judging.claims", "ClaimVerdict": "harness.judging.verdicts",
    "RunContext": "harness.protocol.context", "Backend": "harness.backend", "Verification": "harness.backend",
    "Record": "harness.results.record", "UsageError": "harness.errors", "did_you_mean": "harness.errors",
    "hardware_profiles": "harness.hardware.profiles", "pyplot": "harness.output.plotting",
    "save_figure": "harness.output.plotting", "draw_rooflines": "harness.output.plotting", "plain_log_ticks": "harness.output.plotting",
    "split_list": "harness.params",
    "parse_int_list": "harness.params", "run_once": "harness.testing", "judge_once": "harness.testing",
    "judge_control_once": "harness.testing",
    "QualityRule": "harness.judging.quality", "QualityTracker": "harness.judging.quality",
    "quality_params": "harness.judging.quality",
    "TrainingLog": "harness.protocol.mlperf_log", "training_log": "harness.protocol.mlperf_log",
    "logs_location": "harness.protocol.mlperf_log",
    "fingerprint": "harness.hardware.fingerprint", "fraction_or_problem": "harness.hardware.peaks",
    "torch_flops": "harness.protocol.flops",
}

__all__ = [*_EXPORTS, "__version__"]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'harness' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value      # the next lookup is a plain attribute
    return value


def __dir__() -> list[str]:
    return sorted(__all__)


if TYPE_CHECKING:   # for type checkers and IDEs: the same names, eagerly
    from harness.backend import Backend, Verification  # noqa: F401
    from harness.judging.claims import Claim, ClaimVerdict, Control, Premise  # noqa: F401
    from harness.errors import UsageError, did_you_mean  # noqa: F401
    from harness.hardware.profiles import hardware_profiles  # noqa: F401
    from harness.hookspecs import hookimpl  # noqa: F401
    from harness.params import Param, parse_int_list, split_list  # noqa: F401
    from harness.output.plotting import draw_rooflines, plain_log_ticks, pyplot, save_figure  # noqa: F401
    from harness.protocol.context import RunContext  # noqa: F401
    from harness.results.record import Record  # noqa: F401
    from harness.testing import judge_control_once, judge_once, run_once  # noqa: F401
    from harness.workload import Workload  # noqa: F401
    from harness.judging.quality import QualityRule, QualityTracker, quality_params  # noqa: F401
    from harness.protocol.mlperf_log import TrainingLog, logs_location, training_log  # noqa: F401
    from harness.hardware.fingerprint import fingerprint  # noqa: F401
    from harness.hardware.peaks import fraction_or_problem  # noqa: F401
    from harness.protocol.flops import torch_flops  # noqa: F401
