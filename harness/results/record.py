"""The case record, typed: one dataclass per part, each owning its JSON form.

``Record.to_json()`` is what ``results.jsonl`` holds (validated against
``record.schema.json``, schema version 4); ``Record.from_json()`` reads version 4, and
:func:`upgrade` turns an older record (``record-v1.schema.json`` to ``record-v3.schema.json``) into
version 4, step by step.
Every module that reads records uses these attributes, not string keys.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from harness.judging.baseline_rule import CaseKey
from harness.judging.claims import POINT_ESTIMATE, ClaimVerdict
from harness.judging.verdicts import as_number
from harness.hardware.identity import display, identity
from harness.hardware.peaks import IMPOSSIBLE
from harness.work_identity import comparable_version
from harness.judging.intervals import DEFAULT_CONFIDENCE

SCHEMA_ID = "hpml-harness/record"
SCHEMA_VERSION = 4
RUN_STATUSES = ("ok", "failed", "skipped", "timeout")


@dataclass
class Throughput:
    """A workload's headline rate: which metric it is and its unit (declared by the workload), and
    optionally the metric that gives it as a fraction of the machine's peak."""

    metric: str
    unit: str
    fraction_of_peak: str | None = None


@dataclass
class WorkloadInfo:
    name: str
    source: str
    paper: str = ""
    throughput: Throughput | None = None
    ceilings: dict[str, str] = field(default_factory=dict)   # metric -> unit, as the workload declares
    # What work ran (harness.work_identity): the declared protocol_version, and the work as run
    # ({"digest", "facts"}: resolved params and the workload's describe_work); the version is the
    # protocol_version and a hash of the plugin's source files, kept as provenance. '' / {} on
    # records made before they existed.
    version: str = ""
    protocol_version: str = ""
    work: dict[str, Any] = field(default_factory=dict)
    compare_by: str = ""      # Workload.compare_by: what its cases are compared by across machines

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> WorkloadInfo:
        tp = d.get("throughput")
        return cls(d["name"], d["source"], d.get("paper", ""), Throughput(**tp) if tp else None,
                   dict(d.get("ceilings") or {}), d.get("version", ""), d.get("protocol_version", ""),
                   dict(d.get("work") or {}), str(d.get("compare_by") or ""))


@dataclass
class BackendInfo:
    """What was requested, and the evidence of what really ran."""

    requested: str | None
    source: str | None = None
    verified: bool | None = None
    library: str = ""
    evidence: dict[str, Any] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    environment: dict[str, str] = field(default_factory=dict)

    @property
    def label(self) -> str:
        return self.requested or "default"


@dataclass
class LaunchInfo:
    launcher: str
    ranks: int
    threads: int
    command: list[str] = field(default_factory=list)
    timeout_s: float | None = None
    returncode: int | None = None
    oversubscribed: str = ""       # why the case asked for more CPUs than usable here ('' if not)


@dataclass
class ProtocolInfo:
    repeats: int
    warmup: int
    unstable_cov: float
    allreduce_profiler: str = ""        # pmpi (C hook), python (wrapper) or "" (no MPI comm)
    allreduce_profiler_note: str = ""
    confidence: float = DEFAULT_CONFIDENCE            # two-sided level of the claims' intervals
    until_decided: dict[str, Any] | None = None   # rounds, repeats, looks, per-look level, why it stopped
    launches: int = 1                   # worker launches asked for; > 1: intervals between launches
    # the launches of the cases interleaved with this one, as they ran ("<case_id> #k"; [] when
    # its launches ran back to back): harness.judging.launches
    launch_order: list[str] = field(default_factory=list)


@dataclass
class Stats:
    """Timing statistics of the measured repeats (see harness.protocol.stats.summarize)."""

    n: int
    median: float | None
    mean: float | None
    std: float | None
    min: float | None
    max: float | None
    iqr: float | None
    ci95: list[float] | None
    cov: float | None
    unstable: bool


@dataclass
class PhaseStats:
    """One phase's seconds per repeat over ranks (see harness.protocol.aggregate.phase_summary)."""

    max_s: float
    mean_s: float
    imbalance: float
    per_rank_s: list[float]
    min_s: float = 0.0
    count_per_repeat: float = 0
    # The work the workload counted in the phase (Workload.work_counts; absent where none was):
    # per repeat summed over ranks, the rate (mean per repeat over max_s) and where it stands.
    flops_per_repeat: list[float] | None = None
    bytes_per_repeat: list[float] | None = None
    gflops: float | None = None
    gbs: float | None = None
    flop_per_byte: float | None = None
    dtype: str | None = None            # the precision the counted operations ran in (fp32, fp64)
    counted_by: str | None = None       # how the workload counted them (its work_counts text)
    fraction_of_peak: float | None = None          # of this machine's peak for the cores used (ctx.peaks)
    fraction_of_gemm_ceiling: float | None = None  # of this machine's measured GEMM rate (roofline)
    placement_note: str = ""            # why a fraction is missing, and where the ceiling came from

    def to_json(self) -> dict[str, Any]:
        """The phase's JSON: the work fields only where work was counted."""
        return {k: v for k, v in dataclasses.asdict(self).items() if v is not None and (k != "placement_note" or v)}


@dataclass
class CommSummary:
    """Profiled communication over all measured repeats (see harness.protocol.aggregate.comm_summary)."""

    ranks: int
    ops: dict[str, dict[str, Any]]
    repeats: int = 0
    total: dict[str, Any] = field(default_factory=dict)
    per_repeat: dict[str, Any] = field(default_factory=dict)

    @property
    def fraction_max(self) -> float | None:
        return self.total.get("fraction_max")

    @property
    def imbalance(self) -> float | None:
        return self.total.get("imbalance")


@dataclass
class ControlRole:
    """Set on the records ``harness controls`` writes: which claim's control this case serves."""

    claim: str
    role: str          # "control" (the case judged) or "baseline"
    why: str
    kind: str = ""     # the controls' kinds (ablation / sanity), "; "-joined like claim and why


@dataclass
class Record:
    """One case (workload x size x params x backend x ranks x threads) run under the protocol."""

    id: str
    case_id: str
    run_id: str
    created: str
    status: str
    workload: WorkloadInfo
    size: str
    params: dict[str, Any]
    backend: BackendInfo
    launch: LaunchInfo
    protocol: ProtocolInfo
    reason: str = ""
    duration_s: float = 0.0
    swept: dict[str, Any] = field(default_factory=dict)
    hardware: dict[str, Any] = field(default_factory=dict)
    # Which machine ran (JSON key "machine"): harness.hardware.identity's key, label, name, facts.
    identity: dict[str, Any] = field(default_factory=dict)
    profile: dict[str, Any] = field(default_factory=lambda: {"name": None})
    software: dict[str, Any] = field(default_factory=dict)
    environment: dict[str, str] = field(default_factory=dict)
    samples: list[float] = field(default_factory=list)
    samples_per_rank: list[list[float]] = field(default_factory=list)
    sample_launches: list[int] = field(default_factory=list)   # the worker launch (0, 1, ...) of each sample
    stats: Stats | None = None
    phases: dict[str, PhaseStats] = field(default_factory=dict)
    comm: CommSummary | None = None
    resources: dict[str, Any] = field(default_factory=dict)
    system_load: dict[str, Any] = field(default_factory=dict)
    metrics: dict[str, Any] = field(default_factory=dict)
    metric_samples: dict[str, list[Any]] = field(default_factory=dict)
    replicates: dict[str, dict[str, float]] = field(default_factory=dict)   # metric -> seed id -> value
    claims: list[ClaimVerdict] = field(default_factory=list)
    stderr_tail: str = ""
    control: ControlRole | None = None

    # -- what readers ask of a record ------------------------------------------------------
    @property
    def key(self) -> CaseKey:
        """The case as the baseline rule names it: the planned Case's key of the same case."""
        return CaseKey(self.workload.name, self.size, self.params, self.backend.requested, self.launch.ranks,
                       self.launch.threads)

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    @property
    def emulated(self) -> bool:
        """Ran under binary translation (qemu-user): its results hold, its timings are not the machine's."""
        return bool((self.hardware.get("emulation") or {}).get("emulated"))

    @property
    def commit(self) -> str:
        """The harness commit the record was made at (12 hex digits, "+" when the tree had changes), or ""."""
        git = (self.software or {}).get("git") or {}
        commit = git.get("commit") if isinstance(git, dict) else None
        return f"{commit[:12]}{'+' if git.get('dirty') else ''}" if isinstance(commit, str) and commit else ""

    @property
    def machine(self) -> str:
        """The machine as a report names it: the user's --machine-name, else the label made from
        its facts ("AMD EPYC (zen4), 2 vCPU, VM"); never a profile's or a host's name."""
        return display(self.machine_identity) + (" [emulated]" if self.emulated else "")

    @property
    def machine_identity(self) -> dict[str, Any]:
        """The record's ``machine`` section (made from its hardware section where it has none yet)."""
        return self.identity or identity(self.hardware)

    @property
    def machine_key(self) -> str:
        """The stable key of the machine's facts (two machines with one label have two keys)."""
        return str(self.machine_identity["key"])

    @property
    def work_version(self) -> str:
        """The key of the work the case measured (harness.work_identity.comparable_version): its
        protocol version, declared or mapped from its source hash through a versions.lock ('pv:3');
        else its source hash; records from before versions were kept match only records of their
        own harness commit ('unversioned@<commit>')."""
        w = self.workload
        return comparable_version(w.name, w.version, w.protocol_version) or f"unversioned@{self.commit or '?'}"

    @property
    def work_digest(self) -> str:
        """The digest of the work as run ('' on records made before it was kept)."""
        return str(self.workload.work.get("digest") or "")

    def throughput(self) -> tuple[float | None, str]:
        """(value, unit) of the workload's declared headline metric, or (None, '')."""
        tp = self.workload.throughput
        if tp is None:
            return None, ""
        return self.number(tp.metric), tp.unit

    def comparison_seconds(self) -> tuple[list[float] | None, str]:
        """(seconds per replicate, the metric) a training case is compared by across machines:
        the workload's ``compare_by`` metric per seed (replicates) or per repeat (metric
        samples), with 2 or more values; records made before compare_by was kept fall back to
        per-seed ``seconds_to_target`` (time to quality); (None, '') for the repeats' wall time."""
        for metric in ([self.workload.compare_by] if self.workload.compare_by else []) + ["seconds_to_target"]:
            by_seed = self.replicates.get(metric)
            raw = list(by_seed.values()) if by_seed else list(self.metric_samples.get(metric) or [])
            values = []
            for v in raw:
                v = v[-1] if isinstance(v, list) and v else v     # a seed's list: its last value
                if isinstance(v, (int, float)) and not isinstance(v, bool) and v == v and v > 0:
                    values.append(float(v))
            if len(values) >= 2:
                return values, metric
        return None, ""

    def time_to_quality(self) -> dict[str, Any] | None:
        """The seconds to the workload's validation target (``seconds_to_target``: per repeat, or
        per seed where the workload reports seeds) as {mean, low, high (95 % t-interval), reached,
        runs}: the trainings that reached it of those that ran; None where the case reports none."""
        from harness.judging.intervals import Arm, mean_interval

        by_seed = self.replicates.get("seconds_to_target")
        if by_seed:
            values = [float(v[-1] if isinstance(v, list) else v) for v in by_seed.values()]
            share = self.number("target_reached_share")
            runs = round(len(values) / share) if share else len(values)
        else:
            values = [float(v) for v in self.metric_samples.get("seconds_to_target") or []]
            runs = len(self.samples)
        if not values:
            return None if self.number("reached_quality") is None and "seconds_to_target" not in self.metrics \
                else {"mean": None, "low": None, "high": None, "reached": 0, "runs": runs}
        interval = mean_interval(Arm(tuple(values)))
        return {"mean": sum(values) / len(values), "low": interval.low if interval else None,
                "high": interval.high if interval else None, "reached": len(values), "runs": max(runs, len(values))}

    def energy_to_quality(self) -> float | None:
        """Mean joules from a training's start to its validation target (``joules_to_target``, per
        repeat), over the trainings that reached it; None where none was measured."""
        values = [float(v) for v in self.metric_samples.get("joules_to_target") or []]
        return sum(values) / len(values) if values else None

    def _declared_fraction(self) -> float | None:
        tp = self.workload.throughput
        return self.number(tp.fraction_of_peak) if tp is not None and tp.fraction_of_peak else None

    def fraction_of_peak(self) -> float | None:
        """The declared fraction-of-peak metric (0..1), where the workload declares one and the
        peak was this machine's: None above 1.05, and None for an older record judged against a
        profile it matched only by family, core or GPU (:meth:`peak_problem` says why)."""
        value = self._declared_fraction()
        return None if value is None or self.peak_problem() else value

    def peak_problem(self) -> str:
        """Why the record's fraction of peak is not given ('' when it is): the workload's own
        ``peak_problem`` metric; a fraction above 1.05; or, for a record made before peaks were the
        machine's own (no ``peak_source`` metric), a profile that is not this SKU."""
        said = self.metrics.get("peak_problem")
        if isinstance(said, str) and said:
            return said
        value = self._declared_fraction()
        if value is None:
            return ""
        if value > IMPOSSIBLE:
            return (f"fraction of peak {value:.2f}: measured beats the peak it was judged against, so that peak "
                    "is not this machine's")
        if "peak_source" not in self.metrics and self.profile.get("match_by") not in ("model", "model name"):
            return (f"judged against profile {self.profile.get('name')!r}, matched by "
                    f"{self.profile.get('match_by')}: not this machine's peak")
        return ""

    def number(self, metric: str) -> float | None:
        """A numeric metric, or None when missing or not a number."""
        return as_number(self.metrics.get(metric))

    # -- JSON --------------------------------------------------------------------------------
    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"schema": SCHEMA_ID, "schema_version": SCHEMA_VERSION}
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if f.name == "claims":
                out["claims"] = [c.to_json() for c in value]
            elif f.name == "identity":
                out["machine"] = value or identity(self.hardware)
            elif dataclasses.is_dataclass(value):
                out[f.name] = dataclasses.asdict(value)
            elif f.name == "phases":
                out["phases"] = {k: v.to_json() for k, v in value.items()}
            else:
                out[f.name] = value
        return out

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Record:
        """A record from its version-3 JSON (call :func:`upgrade` first on an older one)."""
        if d.get("schema_version") != SCHEMA_VERSION:
            raise ValueError(f"Record.from_json reads schema version {SCHEMA_VERSION}, "
                             f"not {d.get('schema_version')!r}")
        plain = {f.name: d[f.name] for f in dataclasses.fields(cls) if f.name in d}
        plain.update(
            identity=d["machine"],
            workload=WorkloadInfo.from_json(d["workload"]),
            backend=BackendInfo(**d["backend"]),
            launch=LaunchInfo(**d["launch"]),
            protocol=ProtocolInfo(**d["protocol"]),
            stats=Stats(**d["stats"]) if d.get("stats") else None,
            phases={k: PhaseStats(**v) for k, v in (d.get("phases") or {}).items()},
            comm=CommSummary(**d["comm"]) if d.get("comm") else None,
            claims=[ClaimVerdict.from_json(c) for c in d.get("claims") or []],
            control=ControlRole(**d["control"]) if d.get("control") else None,
        )
        return cls(**plain)


def upgrade_v1(d: dict[str, Any]) -> dict[str, Any]:
    """A version-1 record's JSON as version 2: claim statuses from ``passed`` (and, for version 1
    only, the text of the reason, which was then the only mark of 'not applicable')."""
    out = dict(d, schema_version=2, control=None)
    out["workload"] = dict(d["workload"], throughput=None, ceilings={})
    out["workload"].setdefault("paper", "")
    out.setdefault("swept", {})
    out.setdefault("samples_per_rank", [])
    out.setdefault("metric_samples", {})
    out.setdefault("stderr_tail", "")
    out.setdefault("duration_s", 0.0)
    out["launch"] = {"timeout_s": None, "returncode": None, **d["launch"]}
    out["backend"] = dict(d["backend"])
    out["backend"].setdefault("source", None)
    out["backend"].setdefault("library", "")
    protocol = dict(d["protocol"])
    protocol.setdefault("unstable_cov", 0.10)
    protocol.setdefault("allreduce_profiler", "")
    protocol.setdefault("allreduce_profiler_note", "")
    out["protocol"] = protocol
    claims = []
    for c in d.get("claims") or []:
        c = dict(c)
        passed, reason = c.pop("passed", None), str(c.get("reason", ""))
        if passed is not None:
            status = "pass" if passed else "fail"
        elif reason.startswith("not applicable"):
            status, reason = "not_applicable", reason.removeprefix("not applicable: ")
        else:
            status = "not_evaluated"
        when = c.get("when")
        claims.append(dict(c, status=status, reason=reason, has_control=False, control=None,
                           when={k: list(v) for k, v in when.items()} if when else None))
    out["claims"] = claims
    return out


def upgrade_v2(d: dict[str, Any]) -> dict[str, Any]:
    """A version-2 record's JSON as version 3: its verdicts read as they were judged, marked as
    judged on a point estimate (no interval, no level); no replicates."""
    out = dict(d, schema_version=3, replicates={})
    out["protocol"] = dict(d["protocol"], confidence=DEFAULT_CONFIDENCE, until_decided=None)
    out["claims"] = [dict(c, interval=None, confidence=None, replicates=None, paired=None, evidence=None,
                          interval_method=POINT_ESTIMATE if c.get("status") in ("pass", "fail") else "")
                     for c in d.get("claims") or []]
    return out


def upgrade_v3(d: dict[str, Any]) -> dict[str, Any]:
    """A version-3 record's JSON as version 4: the machine's identity made from its hardware
    section (a v3 fingerprint does not say whether it ran virtualised: that fact is unknown, so
    its key differs from a version-4 record of the same machine); no workload version."""
    out = dict(d, schema_version=SCHEMA_VERSION, machine=identity(d.get("hardware") or {}))
    out["workload"] = dict(d["workload"], version="", protocol_version="")
    return out


def upgrade(d: dict[str, Any]) -> dict[str, Any]:
    """A record's JSON of any version this harness reads, as the current version."""
    if d.get("schema_version") == 1:
        d = upgrade_v1(d)
    if d.get("schema_version") == 2:
        d = upgrade_v2(d)
    if d.get("schema_version") == 3:
        d = upgrade_v3(d)
    return d
