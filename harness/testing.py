"""Unit-testing a workload without the command line: :func:`run_once`.

A plugin's own tests call ``run_once(MyWorkload(), size="smoke")`` and assert on the metrics. It
runs in the test's process (no child, no MPI launcher): the workload is checked against the
contract as the registry checks it, its params are resolved and checked as a run resolves them,
and ``setup``, the repeats and ``teardown`` run with a real phase clock, so ``ctx.clock.phase()``,
``ctx.replicates()`` and the metric checks behave as they do under ``harness run``.
"""
from __future__ import annotations

import pathlib
import shutil
import tempfile
from typing import Any

from harness.errors import UsageError
from harness.protocol.context import RunContext
from harness.protocol.phases import PhaseClock
from harness.workload import Workload, checked_workload


class RunOnceResult(dict):
    """The metrics of the last repeat (this is a dict of them), with what else was measured, as
    the worker of ``harness run`` measures it (the same loop, :mod:`harness.protocol.repeats`):
    ``phases`` ({phase: {"seconds", "count"}} of the last repeat), ``phases_per_repeat``,
    ``metric_samples`` (each numeric metric per measured repeat), ``replicates`` (what the workload
    reported with ``ctx.replicates``: per metric and id, a value per measured repeat), ``seconds``
    (each measured repeat's wall time) and ``ctx`` (the context, whose ``state`` holds what setup
    kept)."""

    phases: dict[str, dict[str, float]]
    phases_per_repeat: list[dict[str, dict[str, float]]]
    metric_samples: dict[str, list[Any]]
    replicates: dict[str, dict[str, list[float]]]
    seconds: list[float]
    ctx: RunContext


def prepare(workload: Workload | type[Workload], size: str = "smoke", params: dict[str, Any] | None = None, *,
            threads: int = 1, artifact_dir: str | pathlib.Path | None = None, mpi: bool | None = None,
            profile_dirs: list[pathlib.Path] | None = None) -> tuple[Workload, RunContext]:
    """(the checked workload, a context after its ``setup``): for a benchmark that times ``run``
    itself (asv's ``benchmarks/bench_workloads.py``). :func:`run_once` is this, then the repeats.
    Raises ``UsageError`` when the workload breaks the contract or a param is bad."""
    from harness.protocol.comm import ProfiledComm

    checked, why = checked_workload(workload)
    if checked is None:
        raise UsageError(why)
    resolved = checked.resolve_params(size, params or {})
    checked.check_params(resolved)
    clock = PhaseClock()
    comm = None
    if mpi is not False:
        try:
            from mpi4py import MPI
        except ImportError:
            if mpi:
                raise
        else:
            comm = ProfiledComm(MPI.COMM_WORLD, clock)
    folder = pathlib.Path(artifact_dir) if artifact_dir is not None else pathlib.Path(
        tempfile.mkdtemp(prefix=f"harness-{checked.name}-"))
    folder.mkdir(parents=True, exist_ok=True)
    ctx = RunContext(params=resolved, size=size, threads=threads, artifact_dir=folder, clock=clock, _comm=comm,
                     _comm_error="no MPI communicator: run_once(..., mpi=False), or mpi4py is not installed",
                     profile_dirs=list(profile_dirs or []))
    checked.setup(ctx)
    clock.take()
    return checked, ctx


def run_once(workload: Workload | type[Workload], size: str = "smoke", params: dict[str, Any] | None = None, *,
             repeats: int = 1, warmup: int = 0, threads: int = 1,
             artifact_dir: str | pathlib.Path | None = None, mpi: bool | None = None) -> RunOnceResult:
    """Run ``workload`` at ``size`` with ``params`` on top: ``warmup`` discarded repeats, then
    ``repeats`` measured ones, in this process, through the repeat loop of ``harness run``;
    returns the last repeat's metrics.

    Raises ``UsageError`` when the workload breaks the contract or a param is bad (the message a
    user would see), and whatever the workload itself raises. ``ctx.comm`` is mpi4py's COMM_WORLD
    (one rank under plain pytest, more under ``mpiexec -n N python -m pytest``) when mpi4py is
    installed, as in a one-rank case of a run; ``mpi=False`` leaves it out (``ctx.comm`` raises),
    ``mpi=True`` requires it. What the workload writes goes to ``artifact_dir`` (a pytest
    ``tmp_path``), kept; without one, to a temporary folder removed when the run ends.
    """
    from harness.protocol.repeats import measure_repeats

    scratch = None if artifact_dir is not None else tempfile.mkdtemp(prefix="harness-run-once-")
    try:
        checked, ctx = prepare(workload, size, params, threads=threads,
                               artifact_dir=artifact_dir if artifact_dir is not None else scratch, mpi=mpi)
        try:
            done = measure_repeats(checked, ctx, warmup=warmup, repeats=repeats, comm=ctx._comm)
        finally:
            checked.teardown(ctx)
    finally:
        if scratch is not None:
            shutil.rmtree(scratch, ignore_errors=True)
    result = RunOnceResult(done.metrics)
    result.phases = done.phases[-1] if done.phases else {}
    result.phases_per_repeat, result.metric_samples = done.phases, done.metric_samples
    result.replicates, result.seconds, result.ctx = done.replicates, done.samples, ctx
    return result
