"""Unit-testing a workload without the command line: :func:`run_once`, :func:`judge_once`,
:func:`judge_control_once`.

A plugin's own tests call ``run_once(MyWorkload(), size="smoke")`` and assert on the metrics. It
runs in the test's process (no child, no MPI launcher): the workload is checked against the
contract as the registry checks it, its params are resolved and checked as a run resolves them,
and ``setup``, the repeats and ``teardown`` run with a real phase clock, so ``ctx.clock.phase()``,
``ctx.replicates()`` and the metric checks behave as they do under ``harness run``.
``judge_once`` judges the workload's claims on such a run (and their baselines'), and
``judge_control_once`` one claim on its control case, with the intervals of ``harness run`` and
``harness controls``: a plugin's tests can assert that a claim passes, and that it fails where it must.
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
    replicate_means: dict[str, dict[str, float]]     # per metric and id, the mean over the repeats (as records keep it)
    seconds: list[float]
    ctx: RunContext


def _checked(workload: Workload | type[Workload]) -> Workload:
    """The workload checked against the contract as registration checks it; UsageError if it breaks it."""
    checked, why = checked_workload(workload)
    if checked is None:
        raise UsageError(why)
    return checked


def prepare(workload: Workload | type[Workload], size: str = "smoke", params: dict[str, Any] | None = None, *,
            threads: int = 1, artifact_dir: str | pathlib.Path | None = None, mpi: bool | None = None,
            profile_dirs: list[pathlib.Path] | None = None) -> tuple[Workload, RunContext]:
    """(the checked workload, a context after its ``setup``): for a benchmark that times ``run``
    itself (asv's ``benchmarks/bench_workloads.py``). :func:`run_once` is this, then the repeats.
    Raises ``UsageError`` when the workload breaks the contract or a param is bad."""
    from harness.protocol.comm import ProfiledComm

    checked = _checked(workload)
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
    result.replicate_means = done.replicate_means()
    return result


def _evidence(checked: Workload, result: RunOnceResult) -> dict[str, Any]:
    """What a claim is judged on, from an in-process run, as from a record: a seed's value is its
    mean over the repeats (as the worker keeps it)."""
    from harness.judging.case import evidence

    return evidence(dict(result), result.metric_samples, result.replicate_means, checked.variation)


def _in_process(checked: Workload, size: str, params: dict[str, Any], repeats: int, warmup: int,
                threads: int, artifact_dir: str | pathlib.Path | None,
                mpi: bool | None) -> tuple[dict[str, Any], dict[str, Any]] | str:
    """(evidence, judged params) of one case run here, or why it cannot run in one process."""
    params = dict(params)
    ranks = int(params.pop("ranks", 1))
    threads = int(params.pop("threads", threads))
    repeats = max(repeats, int(params.pop("repeats", 0)))
    if ranks != 1:
        return f"needs {ranks} ranks, and this process is one: use `harness run` or `harness controls`"
    result = run_once(checked, size, params, repeats=repeats, warmup=warmup, threads=threads,
                      artifact_dir=artifact_dir, mpi=mpi)
    return _evidence(checked, result), {"size": size, **result.ctx.params, "ranks": 1, "threads": threads}


def judge_once(workload: Workload | type[Workload], size: str = "smoke", params: dict[str, Any] | None = None, *,
               repeats: int = 3, warmup: int = 0, threads: int = 1,
               artifact_dir: str | pathlib.Path | None = None, mpi: bool | None = None) -> list:
    """Every claim of ``workload`` judged on this case, in this process, with the intervals of
    ``harness run``: the case runs through :func:`run_once` (``repeats`` measured repeats), and a
    relative claim's baseline (the case with the claim's ``relative_to`` on top) runs the same
    way. Returns one :class:`~harness.judging.claims.ClaimVerdict` per claim, in the workload's order. A
    baseline on another rank count cannot run in one process: that verdict is ``not_evaluated``
    and says so."""
    checked = _checked(workload)
    here = _in_process(checked, size, params or {}, repeats, warmup, threads, artifact_dir, mpi)
    if isinstance(here, str):
        raise UsageError(f"judge_once: the case {here}")
    case, judged = here
    verdicts = []
    for claim in checked.claims:
        verdict = claim.evaluate(case, judged)
        if claim.relative_to and verdict.status == "not_evaluated":
            base = _in_process(checked, size, {**(params or {}), **claim.relative_to}, repeats, warmup, threads,
                               artifact_dir, mpi)
            verdict = (claim._verdict("not_evaluated", f"its baseline {base}") if isinstance(base, str)
                       else claim.evaluate(case, judged, base[0]))
        verdicts.append(verdict)
    return verdicts


def judge_control_once(workload: Workload | type[Workload], claim: str | int, size: str = "smoke", *,
                       repeats: int = 3, warmup: int = 0, threads: int = 1,
                       artifact_dir: str | pathlib.Path | None = None, mpi: bool | None = None):
    """One claim (its text, ``claim.text``, or its index) judged on its :class:`~harness.judging.claims.Control`
    case at ``size``, in this process, as ``harness controls`` judges it: the claim must come out
    ``fail`` (a unit test that the claim can fail). A relative claim's baseline is the control
    case with the claim's ``relative_to`` on top. A control on more than one rank cannot run in
    one process: that verdict is ``not_evaluated`` and says so."""
    checked = _checked(workload)
    found = (checked.claims[claim] if isinstance(claim, int)
             else next((c for c in checked.claims if c.text == claim), None))
    if found is None:
        raise UsageError(f"claim {claim!r}: {checked.name} has the claims "
                         f"{'; '.join(c.text for c in checked.claims)}")
    if found.control is None:
        raise UsageError(f"claim {found.text!r} of {checked.name} declares no control: give it one")
    here = _in_process(checked, size, dict(found.control.params), repeats, warmup, threads, artifact_dir, mpi)
    if isinstance(here, str):
        return found._verdict("not_evaluated", f"its control {here}")
    base = None
    if found.relative_to:
        base = _in_process(checked, size, found.control.baseline_params(found.relative_to), repeats, warmup,
                           threads, artifact_dir, mpi)
        if isinstance(base, str):
            return found._verdict("not_evaluated", f"its control's baseline {base}")
    return found.evaluate_control(here[0], None if base is None else base[0])
