"""Running one case end to end: skip checks, child process, record.

The parent never imports a workload's heavy dependencies: it decides skips, writes a
spec, launches ``harness.worker`` (under ``mpiexec`` for several ranks), and builds the
record from the worker's result file, or from its error files and exit status.
"""
from __future__ import annotations

import datetime as _dt
import json
import os
import pathlib
import re
import sys
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

from harness.launch.launcher import Launcher, worker_argv
from harness.launch.process import ProcessResult, run_process
from harness.plan import Case
from harness.protocol.aggregate import comm_summary, phase_summary, repeat_samples, resource_summary
from harness.protocol.pmpi import ready_hook
from harness.protocol.stats import UNSTABLE_COV, summarize
from harness.provenance import numerics_environment, software
from harness.registry import Registry

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
    history: list[dict[str, Any]] = field(default_factory=list)  # ok records, for relative claims
    profile_data: dict[str, Any] = field(default_factory=dict)   # the matched profile's TOML, for workloads
    launcher: Launcher = field(default_factory=Launcher)
    _pmpi: tuple[str | None, str] | None = None                    # (hook path, why none), built once

    def allreduce_hook(self) -> tuple[str | None, str]:
        """The compiled and proved PMPI hook for MPI_Allreduce (on first use), or None and why."""
        if self._pmpi is None:
            path, note = ready_hook()
            self._pmpi = (str(path) if path else None, note)
        return self._pmpi

    def baseline_metrics(self, case: Case, relative_to: dict[str, Any]) -> dict[str, Any] | None:
        """Metrics of the latest ok record that is ``case`` with ``relative_to`` swapped in.

        ``relative_to`` names params, or ``ranks``: a baseline at another rank count is matched
        whatever its threads (the default thread count follows the ranks)."""
        want = dict(case.params, **{k: v for k, v in relative_to.items() if k not in ("ranks", "threads")})
        ranks = relative_to.get("ranks", case.ranks)
        threads = relative_to.get("threads", None if "ranks" in relative_to else case.threads)
        for rec in reversed(self.history):
            if (rec["workload"]["name"] == case.workload and rec["size"] == case.size
                    and rec["params"] == want and rec["backend"]["requested"] == case.backend
                    and rec["launch"]["ranks"] == ranks
                    and (threads is None or rec["launch"]["threads"] == threads)):
                return rec["metrics"]
        return None

    @property
    def work_dir(self) -> pathlib.Path:
        return self.out_dir / ".work" / self.run_id


def _now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.=-]+", "_", text)[:120]


def _load() -> list[float]:
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return []


def skip_reason(case: Case, registry: Registry, launcher: Launcher) -> str | None:
    """Why ``case`` cannot run here, decided in the parent, or None."""
    workload = registry.workload(case.workload)
    if case.backend is not None:
        backend = registry.backend(case.backend)
        ok, why = backend.available()
        if not ok:
            return f"backend {case.backend!r} is not available here: {why}"
        why = backend.can_drive(workload.frameworks)
        if why:
            return why
    why = launcher.skip_reason(case.ranks)
    if why:
        return why
    return workload.skip_reason(case.params, case.ranks)


def base_record(case: Case, session: Session) -> dict[str, Any]:
    """The parts of a record known before the case runs (status 'skipped' until told otherwise)."""
    reg = session.registry
    workload = reg.workload(case.workload)
    return {
        "schema": "hpml-harness/record", "schema_version": 1,
        "id": uuid.uuid4().hex, "case_id": case.case_id, "run_id": session.run_id,
        "created": _now(), "duration_s": 0.0, "status": "skipped", "reason": "",
        "workload": {"name": case.workload, "source": reg.source("workload", case.workload),
                     "paper": workload.paper},
        "size": case.size, "params": case.params, "swept": case.swept,
        "backend": {"requested": case.backend,
                    "source": reg.source("backend", case.backend) if case.backend else None,
                    "verified": None, "library": "", "evidence": {}, "warnings": [], "environment": {}},
        "launch": {"launcher": "none", "ranks": case.ranks, "threads": case.threads, "command": [],
                   "timeout_s": case.timeout, "returncode": None},
        "hardware": session.hardware, "profile": session.profile, "software": software(),
        "environment": numerics_environment(os.environ),
        "protocol": {"repeats": case.repeats, "warmup": case.warmup, "unstable_cov": session.unstable_cov},
        "samples": [], "stats": None, "phases": {}, "comm": None, "resources": {},
        "system_load": {}, "metrics": {}, "metric_samples": {}, "claims": [], "stderr_tail": "",
    }


def child_environment(case: Case, registry: Registry) -> tuple[dict[str, str], dict[str, str]]:
    """(full child env, the part the harness set) with threads explicit and the backend's variables."""
    chosen = {name: str(case.threads) for name in THREAD_VARIABLES}
    if case.backend is not None:
        chosen.update(registry.backend(case.backend).environment(case.threads))
    env = dict(os.environ)
    env.update(chosen)
    env["PYTHONUNBUFFERED"] = "1"
    return env, chosen


def _failure_reason(proc: ProcessResult, error_files: list[pathlib.Path], case: Case) -> tuple[str, str]:
    if proc.timed_out:
        return "timeout", f"exceeded the {case.timeout:g} s timeout and was killed"
    for err in error_files:
        lines = [ln for ln in err.read_text().strip().splitlines() if ln.strip()]
        rank = err.name.rsplit(".rank", 1)[-1].split(".")[0]
        if lines:
            return "failed", f"rank {rank} raised {lines[-1].strip()}"
    code = proc.returncode
    if code is not None and code < 0:
        return "failed", f"worker killed by signal {-code} ({_signal_name(-code)})"
    if code in (134, 139):
        return "failed", f"worker crashed (exit status {code}, {_signal_name(code - 128)})"
    return "failed", f"worker exited with status {code} without a result: a rank died or exited early (see stderr_tail)"


def _signal_name(num: int) -> str:
    import signal
    try:
        return signal.Signals(num).name
    except ValueError:
        return f"signal {num}"


def execute(case: Case, session: Session) -> dict[str, Any]:
    """Run ``case`` and return its record (not yet written)."""
    record = base_record(case, session)
    t_start = time.perf_counter()
    why = skip_reason(case, session.registry, session.launcher)
    if why:
        record["reason"] = why
        return record

    reg = session.registry
    case_dir = session.work_dir / f"{uuid.uuid4().hex[:8]}-{_slug(case.label)}"
    case_dir.mkdir(parents=True, exist_ok=True)
    result_path = case_dir / "result.json"
    artifact_dir = session.out_dir / "artifacts" / _slug(f"{case.label}-{record['id'][:8]}")
    plugins = [reg.source("workload", case.workload)]
    if case.backend:
        plugins.append(reg.source("backend", case.backend))
    spec = {"workload": case.workload, "backend": case.backend, "plugins": plugins,
            "params": case.params, "size": case.size, "ranks": case.ranks, "threads": case.threads,
            "repeats": case.repeats, "warmup": case.warmup, "result_path": str(result_path),
            "artifact_dir": str(artifact_dir), "profile": session.profile_data,
            "profile_dirs": [str(d) for d in reg.profile_dirs],
            "pmpi_hook": session.allreduce_hook()[0]}
    spec_path = case_dir / "spec.json"
    spec_path.write_text(json.dumps(spec))

    env, chosen = child_environment(case, session.registry)
    argv, extra_env, launcher = session.launcher.command(
        case.ranks, case.threads, worker_argv(sys.executable, spec_path))
    env.update(extra_env)
    record["backend"]["environment"] = chosen
    record["environment"] = numerics_environment(env)
    record["launch"].update(launcher=launcher, command=argv)
    record["system_load"]["before"] = _load()

    proc = run_process(argv, env, case.timeout)

    record["system_load"]["after"] = _load()
    record["launch"]["returncode"] = proc.returncode
    record["stderr_tail"] = proc.output_tail
    record["duration_s"] = time.perf_counter() - t_start
    errors = sorted(case_dir.glob("result.json.rank*.error"))
    if proc.timed_out or errors or not result_path.is_file() or proc.returncode != 0:
        record["status"], record["reason"] = _failure_reason(proc, errors, case)
        return record

    result = json.loads(result_path.read_text())
    fill_from_result(record, result, case, session)
    return record


def fill_from_result(record: dict[str, Any], result: dict[str, Any], case: Case, session: Session) -> None:
    """Samples, statistics, phases, comm, verification, metrics and claims from a worker result."""
    ranks = result["ranks"]
    samples = repeat_samples(ranks)
    record["samples"] = samples
    record["samples_per_rank"] = [r["samples"] for r in ranks]
    record["stats"] = summarize(samples, session.unstable_cov)
    record["phases"] = phase_summary(ranks)
    record["comm"] = comm_summary(ranks, case.repeats)
    record["resources"] = resource_summary(ranks)
    record["software"] = dict(record["software"], mpi_library=result.get("mpi_library"))
    if result.get("allreduce_profiler"):
        note = session.allreduce_hook()[1] or result.get("allreduce_profiler_note", "")
        record["protocol"].update(allreduce_profiler=result["allreduce_profiler"],
                                  allreduce_profiler_note=note)
    record["metrics"] = result["metrics"]
    record["metric_samples"] = result["metric_samples"]
    v = result["verification"]
    record["backend"].update(verified=v["ok"] if case.backend else None, library=v["library"],
                             evidence=v["evidence"], warnings=v["warnings"])
    workload = session.registry.workload(case.workload)
    record["claims"] = [
        c.evaluate(record["metrics"], {**case.params, "ranks": case.ranks, "threads": case.threads},
                   session.baseline_metrics(case, c.relative_to) if c.relative_to else None)
        for c in workload.claims]
    if case.backend and not (v["ok"] and all(result.get("verification_per_rank_ok", [True]))):
        record["status"] = "failed"
        record["reason"] = f"backend {case.backend!r} verification failed: {v['reason'] or 'see evidence'}"
        return
    record["status"] = "ok"
    stats = record["stats"]
    if not stats["unstable"]:
        record["reason"] = ""
    elif stats["n"] < 3:
        record["reason"] = f"unstable: only {stats['n']} sample(s); use --repeats 3 or more for statistics"
    else:
        record["reason"] = f"unstable: CoV {stats['cov']:.2f} above {session.unstable_cov:g}"
