"""Unit-testing a workload without the command line: :func:`run_once`.

A plugin's own tests call ``run_once(MyWorkload(), size="smoke")`` and assert on the metrics. It
runs in the test's process (no child, no MPI launcher): the workload is checked against the
contract as the registry checks it, its params are resolved and checked as a run resolves them,
and ``setup``, the repeats and ``teardown`` run with a real phase clock, so ``ctx.clock.phase()``,
``ctx.replicates()`` and the metric checks behave as they do under ``harness run``.
"""
from __future__ import annotations

import pathlib
import tempfile
import time
from typing import Any

from harness.errors import UsageError
from harness.protocol.context import RunContext
from harness.protocol.phases import PhaseClock
from harness.workload import Workload, checked_workload


class RunOnceResult(dict):
    """The metrics of the last repeat (this is a dict of them), with what else was measured:
    ``phases`` ({phase: {"seconds", "count"}} of the last repeat), ``replicates`` (what the workload
    reported with ``ctx.replicates`` in the last repeat), ``seconds`` (each repeat's wall time) and
    ``ctx`` (the context, whose ``state`` holds what setup kept)."""

    phases: dict[str, dict[str, float]]
    replicates: dict[str, dict[str, float]]
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
    ``repeats`` measured ones, in this process; returns the last repeat's metrics.

    Raises ``UsageError`` when the workload breaks the contract or a param is bad (the message a
    user would see), and whatever the workload itself raises. ``ctx.comm`` is mpi4py's COMM_WORLD
    (one rank under plain pytest, more under ``mpiexec -n N python -m pytest``) when mpi4py is
    installed, as in a one-rank case of a run; ``mpi=False`` leaves it out (``ctx.comm`` raises),
    ``mpi=True`` requires it.
    """
    from harness.worker import clean_metrics

    checked, ctx = prepare(workload, size, params, threads=threads, artifact_dir=artifact_dir, mpi=mpi)
    clock = ctx.clock
    seconds: list[float] = []
    metrics: dict[str, Any] = {}
    phases: dict[str, dict[str, float]] = {}
    try:
        for i in range(warmup + repeats):
            ctx.repeat, ctx.warmup = i - warmup, i < warmup
            ctx._replicates = {}
            t0 = time.perf_counter()
            metrics = clean_metrics(checked.run(ctx))
            seconds.append(time.perf_counter() - t0)
            phases = clock.take()
    finally:
        checked.teardown(ctx)
    result = RunOnceResult(metrics)
    result.phases, result.replicates, result.ctx = phases, dict(ctx._replicates), ctx
    result.seconds = seconds[warmup:]
    return result
