"""Running one case end to end: skip checks, child process, record.

The parent never imports a workload's heavy dependencies: it decides skips, writes a
:class:`~harness.casefiles.WorkerSpec`, launches ``harness.worker`` (under ``mpiexec`` for
several ranks), and builds the :class:`~harness.results.record.Record` from the worker's
result, or from its error files and exit status.
"""
from __future__ import annotations

import datetime as _dt
import functools
import os
import pathlib
import re
import signal
import sys
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from harness.casefiles import CaseFiles, WorkerResult, WorkerSpec
from harness.errors import UsageError, check_interrupted
from harness.hardware.fingerprint import usable_cpus
from harness.hardware.identity import identity
from harness.hardware.peaks import machine_peaks
from harness.hardware.placement import gemm_ceilings, place_phases
from harness.judging.intervals import DEFAULT_CONFIDENCE
from harness.judging.case import RunIndex
from harness.launch.launcher import Launcher, worker_argv
from harness.launch.process import ProcessResult, run_process
from harness.launch.slurm import allocation_note
from harness.plan import Case
from harness.progress import Heartbeat
from harness.plugin_guard import available, describe, guarded
from harness.protocol.aggregate import comm_summary, phase_summary, repeat_samples, resource_summary
from harness.protocol.pmpi import ready_hook
from harness.protocol.stats import UNSTABLE_COV, summarize
from harness.software import inherited_environment, numerics_environment, software
from harness.registry import Registry
from harness.results.record import (BackendInfo, CommSummary, LaunchInfo, PhaseStats, ProtocolInfo, Record,
                                    Stats, Throughput, WorkloadInfo)
from harness.work_identity import work_of, workload_version

THREAD_VARIABLES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "BLIS_NUM_THREADS",
                    "VECLIB_MAXIMUM_THREADS", "NUMEXPR_NUM_THREADS")


@dataclass
class Session:
    """What every case of one ``harness run`` shares."""

    registry: Registry
    out_dir: pathlib.Path
    run_id: str
    hardware: dict[str, Any]
    profile: dict[str, Any]
    unstable_cov: float = UNSTABLE_COV
    index: RunIndex = field(default_factory=RunIndex)            # ok records, for relative claims
    profile_data: dict[str, Any] = field(default_factory=dict)   # the matched profile's TOML, for workloads
    machine_name: str | None = None   # --machine-name: shown instead of the label, not part of the key
    launcher: Launcher = field(default_factory=Launcher)
    oversubscribe: bool = False   # run cases that need more CPUs than usable (claims not evaluated)
    confidence: float = DEFAULT_CONFIDENCE   # two-sided level of the claims' intervals
    _pmpi: tuple[str | None, str] | None = None                    # (hook path, why none), built once

    @functools.cached_property
    def identity(self) -> dict[str, Any]:
        """The machine's identity (harness.hardware.identity), made once for every record of the run."""
        return identity(self.hardware, self.machine_name)

    def allreduce_hook(self) -> tuple[str | None, str]:
        """The compiled and proved PMPI hook for MPI_Allreduce (on first use), or None and why."""
        if self._pmpi is None:
            path, note = ready_hook()
            self._pmpi = (str(path) if path else None, note)
        return self._pmpi

    @property
    def work_dir(self) -> pathlib.Path:
        return self.out_dir / ".work" / self.run_id


@dataclass
class PreparedLaunch:
    """How a case starts: the one definition ``--dry-run`` prints and the real run executes."""

    argv: list[str]
    env: dict[str, str]        # the child's whole environment
    chosen: dict[str, str]     # what the harness set: thread counts and the backend's variables
    launcher_env: dict[str, str]  # what the launcher set
    launcher: str              # local, mpiexec or srun

    def shell_text(self) -> str:
        """The command as a shell line, with every variable the harness or launcher set."""
        import shlex
        env = " ".join(f"{k}={shlex.quote(v)}" for k, v in sorted({**self.chosen, **self.launcher_env}.items()))
        return f"{env} {shlex.join(self.argv)}"


def prepare_launch(case: Case, registry: Registry, launcher: Launcher,
                   spec_path: pathlib.Path | str) -> PreparedLaunch:
    """The launch command and environment of ``case`` whose worker spec is at ``spec_path``."""
    env, chosen = child_environment(case, registry)
    argv, extra_env, name = launcher.command(case.ranks, case.threads, worker_argv(sys.executable, spec_path))
    env.update(extra_env)
    return PreparedLaunch(argv=argv, env=env, chosen=chosen, launcher_env=extra_env, launcher=name)


def _now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.=-]+", "_", text)[:120]


def _load() -> list[float]:
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return []


def oversubscription(case: Case, launcher: Launcher) -> str:
    """Why ``case`` would time-slice this machine's CPUs ('' when it fits, or when the launcher
    places ranks elsewhere: srun asks Slurm for the CPUs)."""
    need, usable = case.ranks * case.threads, usable_cpus()
    if launcher.kind != "mpiexec" or need <= usable:
        return ""
    return f"oversubscribed: {case.ranks} rank(s) x {case.threads} thread(s) need {need} CPUs, {usable} usable here"


def skip_reason(case: Case, registry: Registry, launcher: Launcher, oversubscribe: bool = False) -> str | None:
    """Why ``case`` cannot run here, decided in the parent, or None. A case that would
    oversubscribe the CPUs is skipped unless ``oversubscribe``."""
    workload = registry.workload(case.workload)
    if case.backend is not None:
        backend = registry.backend(case.backend)
        ok, why = available(backend)
        if not ok:
            return f"backend {case.backend!r} is not available here: {why}"
        why, exc = guarded(lambda: backend.can_drive(workload.frameworks))
        if exc is not None or why:
            return why or f"backend {case.backend!r}: can_drive() raised {describe(exc)} (a plugin bug)"
    why = launcher.skip_reason(case.ranks)
    if why:
        return why
    crowded = oversubscription(case, launcher)
    if crowded and not oversubscribe:
        return (f"{crowded}: skipped, since time-sliced ranks make its timings and claims meaningless; "
                "--oversubscribe runs it anyway (its claims are then not evaluated)")
    _, why = workload_environment(workload, case.params)
    if why:
        return why
    why, exc = guarded(lambda: workload.skip_reason(case.params, case.ranks))
    if exc is not None:
        return f"workload {case.workload!r}: skip_reason() raised {describe(exc)} (a bug in its plugin)"
    return None if why is None else str(why)


def base_record(case: Case, session: Session) -> Record:
    """The parts of a record known before the case runs (status 'skipped' until told otherwise)."""
    reg = session.registry
    workload = reg.workload(case.workload)
    version, declared = workload_version(workload)
    return Record(
        id=uuid.uuid4().hex, case_id=case.case_id, run_id=session.run_id, created=_now(), status="skipped",
        workload=WorkloadInfo(name=case.workload, source=reg.source("workload", case.workload),
                              paper=workload.paper,
                              throughput=Throughput(*workload.throughput) if workload.throughput else None,
                              ceilings=dict(workload.ceilings), version=version, protocol_version=declared,
                              work=work_of(workload, case.params), compare_by=str(workload.compare_by or "")),
        size=case.size, params=case.params, swept=case.swept,
        backend=BackendInfo(requested=case.backend,
                            source=reg.source("backend", case.backend) if case.backend else None),
        launch=LaunchInfo(launcher="none", ranks=case.ranks, threads=case.threads, timeout_s=case.timeout),
        protocol=ProtocolInfo(repeats=case.repeats, warmup=case.warmup, unstable_cov=session.unstable_cov,
                              confidence=session.confidence, launches=case.launches),
        hardware=session.hardware, identity=session.identity,
        profile=session.profile, software=software(),
        environment=numerics_environment(inherited_environment()),
        resources={"slurm_job_id": os.environ["SLURM_JOB_ID"]} if os.environ.get("SLURM_JOB_ID") else {},
    )


def workload_environment(workload: Any, params: dict[str, Any]) -> tuple[dict[str, str], str]:
    """(the variables the workload asks for these params, '') or ({}, why its ``environment()`` is
    a plugin bug); the parent skips a case whose workload gives no usable answer."""
    wanted, exc = guarded(lambda: workload.environment(dict(params)))
    if exc is None and isinstance(wanted, dict) and all(isinstance(k, str) and isinstance(v, str)
                                                        for k, v in wanted.items()):
        return wanted, ""
    got = f"raised {describe(exc)}" if exc is not None else f"returned {wanted!r:.80}"
    return {}, f"workload {workload.name!r}: environment() {got}, not a dict of str to str (a bug in its plugin)"


def child_environment(case: Case, registry: Registry) -> tuple[dict[str, str], dict[str, str]]:
    """(full child env, the part the harness set) with threads explicit and the backend's variables."""
    chosen = {name: str(case.threads) for name in THREAD_VARIABLES}
    if case.backend is not None:
        chosen.update(registry.backend(case.backend).environment(case.threads))
    chosen.update(workload_environment(registry.workload(case.workload), case.params)[0])
    env = inherited_environment()
    env.update(chosen)
    env["PYTHONUNBUFFERED"] = "1"
    return env, chosen


class CaseInterrupted(Exception):
    """The run was stopped by a signal during a case: its record says so and must still be written."""

    def __init__(self, record: Record, signum: int) -> None:
        super().__init__(record.reason)
        self.record, self.signum = record, signum
        self.case: Case | None = None   # set where the record is not the loop's current case's (interleaving)


def _failure_reason(proc: ProcessResult, files: CaseFiles, case: Case) -> tuple[str, str]:
    if proc.timed_out:
        return "timeout", f"exceeded the {case.timeout:g} s timeout and was killed"
    oom = proc.oom_killed
    if oom:
        return "failed", f"worker {oom}"
    for rank, err in files.errors():
        lines = [ln for ln in err.read_text().strip().splitlines() if ln.strip()]
        if lines:
            return "failed", f"rank {rank} raised {lines[-1].strip()}"
    code = proc.returncode
    if code is not None and code < 0:
        return "failed", f"worker killed by signal {-code} ({_signal_name(-code)})"
    if code in (134, 139):
        return "failed", f"worker crashed (exit status {code}, {_signal_name(code - 128)})"
    return "failed", f"worker exited with status {code} without a result: a rank died or exited early (see stderr_tail)"


def _signal_name(num: int) -> str:
    try:
        return signal.Signals(num).name
    except ValueError:
        return f"signal {num}"


def execute(case: Case, session: Session, show: Callable[[str], None] | None = None, live: bool = False) -> Record:
    """Run ``case`` and return its record, measured but not judged and not yet written (the run
    loop, :mod:`harness.runloop`, judges and writes). ``show`` receives the worker's progress:
    every second when ``live`` (a terminal's status line), else every HARNESS_HEARTBEAT_S."""
    record = base_record(case, session)
    t_start = time.perf_counter()
    why = skip_reason(case, session.registry, session.launcher, session.oversubscribe)
    if why:
        record.reason = why
        return record
    record.launch.oversubscribed = oversubscription(case, session.launcher)

    reg = session.registry
    files = CaseFiles(session.work_dir / f"{uuid.uuid4().hex[:8]}-{_slug(case.label)}")
    plugins = [reg.source("workload", case.workload)]
    if case.backend:
        plugins.append(reg.source("backend", case.backend))
    spec = WorkerSpec(
        workload=case.workload, backend=case.backend, plugins=plugins, params=case.params, size=case.size,
        ranks=case.ranks, threads=case.threads, repeats=case.repeats, warmup=case.warmup,
        case_dir=str(files.folder),
        artifact_dir=str(session.out_dir / "artifacts" / _slug(f"{case.label}-{record.id[:8]}")),
        profile=session.profile_data, profile_dirs=[str(d) for d in reg.profile_dirs],
        peaks=machine_peaks(session.hardware, session.profile, session.profile_data, case.ranks * case.threads),
        pmpi_hook=session.allreduce_hook()[0], first_repeat=case.first_repeat)
    try:
        files.folder.mkdir(parents=True, exist_ok=True)
        spec_path = spec.write()
    except OSError as exc:
        raise UsageError(f"--out {session.out_dir}: cannot write the case's work files in {files.folder} "
                         f"({exc.strerror}); free space there or choose another --out") from None
    launch = prepare_launch(case, reg, session.launcher, spec_path)
    record.backend.environment = launch.chosen
    record.environment = numerics_environment(launch.env)
    record.launch.launcher, record.launch.command = launch.launcher, launch.argv
    record.system_load["before"] = _load()

    try:
        check_interrupted()
        proc = run_process(launch.argv, launch.env, case.timeout,
                           on_tick=Heartbeat(files.folder, show, live) if show is not None else None)
    except KeyboardInterrupt as stop:   # the case's processes are already gone (run_process)
        signum = getattr(stop, "signum", 2)
        record.status = "failed"
        record.reason = f"interrupted by {_signal_name(signum)}: the run was stopped while this case ran"
        slurm_says = allocation_note()
        if slurm_says:
            record.reason += f" ({slurm_says})"
        record.duration_s = time.perf_counter() - t_start
        raise CaseInterrupted(record, signum) from None

    record.system_load["after"] = _load()
    record.launch.returncode = proc.returncode
    record.stderr_tail = proc.output_tail
    record.duration_s = time.perf_counter() - t_start
    if proc.tree:
        record.resources["process_tree"] = proc.tree
    if proc.timed_out or files.errors() or not files.result.is_file() or proc.returncode != 0:
        record.status, record.reason = _failure_reason(proc, files, case)
        return record

    fill_from_result(record, WorkerResult.read(files), case, session, spec.peaks)
    return record


def fill_from_result(record: Record, result: WorkerResult, case: Case, session: Session,
                     peaks: dict[str, Any]) -> None:
    """Samples, statistics, phases, comm, verification and metrics from a worker result; ``peaks``:
    the machine's peaks for the case's cores, as the worker was given them."""
    ranks = result.ranks
    record.samples = repeat_samples(ranks)
    record.sample_launches = [0] * len(record.samples)   # a later launch or round renumbers on merging
    record.samples_per_rank = [r["samples"] for r in ranks]
    record.stats = Stats(**summarize(record.samples, session.unstable_cov))
    record.phases = {k: PhaseStats(**v) for k, v in phase_summary(ranks).items()}
    place_phases(record.phases, session.registry.workload(case.workload).work_counts, peaks,
                 gemm_ceilings(session.index.records, session.identity["key"]), case.ranks * case.threads)
    comm = comm_summary(ranks, case.repeats)
    record.comm = CommSummary(**comm) if comm else None
    record.resources.update(resource_summary(ranks))
    record.software = dict(record.software, mpi_library=result.mpi_library)
    if result.allreduce_profiler:
        record.protocol.allreduce_profiler = result.allreduce_profiler
        record.protocol.allreduce_profiler_note = session.allreduce_hook()[1] or result.allreduce_profiler_note
    record.metrics = result.metrics
    record.metric_samples = result.metric_samples
    record.replicates = result.replicates
    v = result.verification
    record.backend.verified = v.ok if case.backend else None
    record.backend.library, record.backend.evidence, record.backend.warnings = v.library, v.evidence, v.warnings
    if case.backend and not (v.ok and all(result.verification_per_rank_ok)):
        record.status = "failed"
        record.reason = f"backend {case.backend!r} verification failed: {v.reason or 'see evidence'}"
        return
    record.status = "ok"

