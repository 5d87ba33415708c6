"""Is this node as fast as its kind? Each case of a run judged against a reference of the same
machine kind and the same work.

A reference is any results folder or capture (``gallery/<machine>``, a ``harness capture`` of an
accepted node): nothing is typed by hand. A case is matched with the reference's record of the
same machine key (:mod:`harness.hardware.identity`), the same case (:class:`~harness.judging.baseline_rule.CaseKey`:
workload, size, params, backend asked for, ranks x threads) and the same workload version (the
plugin's code and protocol); anything else is "no reference", never a pass. The figure is the ratio
of median seconds per repeat (this run / the reference's runs, pooled) with a bootstrap interval
(:func:`harness.judging.intervals.ratio_of_medians`, as ``harness compare``), widened by the spread
between the reference's runs where it has several (:func:`widened`): ``pass`` when the whole
interval is at most ``1 + tolerance`` (as fast as the reference, within the tolerance, or faster),
``fail`` when the whole interval is above it, ``inconclusive`` otherwise. A check says what
differs between the two runs' conditions (:mod:`harness.history.provenance`) and which claims
changed verdict.
"""
from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from harness.judging.baseline_rule import CaseKey
from harness.judging.current_claims import current_verdicts
from harness.history.provenance import changes, provenance
from harness.judging.intervals import DEFAULT_CONFIDENCE, ratio_of_medians
from harness.plan import case_label
from harness.results.record import Record

TOLERANCE = 0.10
MIN_SAMPLES = 3      # fewer repeats on a side give no interval worth deciding on
MAX_REPEAT_S = 1e7   # a repeat longer than 115 days is not a measurement (1.7e308 s was given as one)


POOLED_CAP = 2000    # the reference's samples a check resamples at most (a seeded subsample beyond)


def bounded(pooled: list[float], cap: int = POOLED_CAP, seed: int = 0) -> list[float]:
    """``pooled`` itself, or a seeded random subsample of ``cap`` of its values: the bootstrap's
    time and memory grow with the samples (BCa's jackknife with their square), and 2,000 values
    already pin a median to well under a per cent; the run-to-run part comes from every run's
    median (:func:`widened`)."""
    if len(pooled) <= cap:
        return pooled
    import random

    return random.Random(seed).sample(pooled, cap)


def sample_problem(record: Record) -> str:
    """Why the record's seconds per repeat cannot be evidence ('' when every one is a finite,
    positive duration below MAX_REPEAT_S), naming the field."""
    for i, s in enumerate(record.samples):
        if isinstance(s, bool) or not isinstance(s, (int, float)) or not math.isfinite(s) or not 0 < s < MAX_REPEAT_S:
            return f"samples[{i}] = {s!r} is not a duration (finite, positive, under {MAX_REPEAT_S:g} s)"
    return ""
CheckStatus = Literal["pass", "fail", "inconclusive", "no reference", "not ok"]


def _case_key(key: CaseKey) -> tuple:
    return (key.workload, key.size, repr(sorted(key.params.items())), key.backend, key.ranks, key.threads)


@dataclass
class CaseCheck:
    """One case of a run against its reference."""

    case: str                       # the record's case id
    label: str                      # for tables: workload[size]{swept} ranks x threads
    status: CheckStatus
    reason: str = ""
    ratio: float | None = None      # median seconds here / the reference's; above 1 is slower
    low: float | None = None
    high: float | None = None
    confidence: float = DEFAULT_CONFIDENCE
    median_s: float | None = None
    reference_median_s: float | None = None
    reference_runs: list[str] = field(default_factory=list)   # the reference's runs of this case
    differs: list[str] = field(default_factory=list)          # provenance: 'name before -> after'
    claims_changed: list[str] = field(default_factory=list)   # 'claim text: pass -> fail'

    @property
    def ratio_text(self) -> str:
        if self.ratio is None:
            return ""
        interval = "" if self.low is None or self.high is None else f" [{self.low:.3f}, {self.high:.3f}]"
        return f"{self.ratio:.3f}{interval}"


@dataclass
class ReferenceRun:
    """A reference run as a check reads it: its samples and summary, and the full record only
    for each case's latest run (whose conditions and claims a check compares), so that a
    reference of 50,000 runs holds 50,000 sample lists, not 50,000 records."""

    id: str
    run_id: str
    created: str
    samples: list[float]
    stats: Any
    metric_samples: dict[str, list[Any]]    # the workload's throughput metric's values only
    record: Record | None = None


class Reference:
    """The ok records of a reference, by machine key, case and workload version. A case the
    reference ran several times (a capture resumed or rerun, runs appended to one folder) is
    judged against all of them: their samples pooled, so the reference carries the machine's
    run-to-run variation and not only one run's noise; its latest run names the conditions.
    Records are read one at a time (a generator is fine): memory grows with the runs' samples."""

    def __init__(self, records: Iterable[Record]) -> None:
        self.runs: dict[tuple, list[ReferenceRun]] = {}
        self.machines: dict[str, str] = {}      # key -> label
        self.versions: dict[tuple, set[str]] = {}
        self.refused: dict[tuple, str] = {}     # (machine, case, version) -> why its runs are no evidence
        latest: dict[tuple, ReferenceRun] = {}
        seen: set[str] = set()
        for r in records:
            if not (r.ok and r.samples) or r.id in seen:    # one run written several times is one run
                continue
            seen.add(r.id)
            key = (r.machine_key, _case_key(r.key), r.work_version)
            problem = sample_problem(r)
            if problem:
                self.refused.setdefault(key, problem)
                continue
            self.machines[r.machine_key] = r.machine
            metric = r.workload.throughput.metric if r.workload.throughput else None
            run = ReferenceRun(r.id, r.run_id, r.created, list(r.samples), r.stats,
                               {metric: list(r.metric_samples.get(metric) or [])} if metric else {})
            self.runs.setdefault(key, []).append(run)
            if key not in latest or r.created >= latest[key].created:
                if key in latest:
                    latest[key].record = None
                run.record = r
                latest[key] = run
            self.versions.setdefault((r.machine_key, _case_key(r.key)), set()).add(r.work_version)
        for key, runs in self.runs.items():
            runs.sort(key=lambda run: (run.created, run is latest[key]))    # oldest first, the latest last

    def __len__(self) -> int:
        return len(self.runs)

    def find(self, record: Record) -> tuple[list[ReferenceRun], str]:
        """(the reference's runs of this record's case, oldest first, '') or ([], why there are none)."""
        refused = self.refused.get((record.machine_key, _case_key(record.key), record.work_version))
        if record.machine_key not in self.machines and refused:
            return [], f"the reference's runs of this case are no evidence: {refused}"
        if record.machine_key not in self.machines:
            kinds = ", ".join(f"{label} [{k}]" for k, label in sorted(self.machines.items())) or "none"
            return [], (f"the reference holds no machine of this one's key ({record.machine} "
                        f"[{record.machine_key}]; it holds: {kinds})")
        runs = self.runs.get((record.machine_key, _case_key(record.key), record.work_version), [])
        return runs, "" if runs else self._missing(record.machine_key, record.key, record.work_version)

    def runs_of(self, key: CaseKey, version: str) -> list[ReferenceRun]:
        """The runs of a planned case at a workload version, on whichever machine the reference
        holds (a capture holds one)."""
        return [r for (machine, case, v), runs in self.runs.items()
                if case == _case_key(key) and v == version for r in runs]

    def missing(self, key: CaseKey, version: str) -> str:
        """Why :meth:`runs_of` found nothing."""
        return "; ".join(self._missing(m, key, version) for m in sorted(self.machines)) or "an empty reference"

    def _missing(self, machine: str, key: CaseKey, version: str) -> str:
        refused = self.refused.get((machine, _case_key(key), version))
        if refused:
            return f"the reference's runs of this case are no evidence: {refused}"
        versions = self.versions.get((machine, _case_key(key)))
        if versions:
            return (f"other work: the reference ran workload version {', '.join(sorted(versions))}, "
                    f"this run {version or 'unknown'}")
        return "the reference did not run this case on this machine kind"


def _claims_changed(reference: Record, record: Record,
                    claims_now: Mapping[str, tuple[str, list[Any]]] | None = None) -> list[str]:
    """'claim: pass -> fail' per claim whose verdict differs, both sides judged by the claims of
    the code that reads them where the records are of its protocol version (harness.judging.current_claims)."""
    before = {v.text: v.status for v in current_verdicts(reference, claims_now)}
    return [f"{v.text}: {before[v.text]} -> {v.status}" for v in current_verdicts(record, claims_now)
            if v.text in before and before[v.text] != v.status]


def widened(ratio: float, low: float, high: float, run_medians: list[float],
            level: float) -> tuple[float, float, float]:
    """The ratio's interval widened by how the reference's runs differ from one another: repeats
    of one run share its conditions (the VM's neighbours, the clock), so their spread misses
    the run-to-run part, which a new run has too. With two runs or more, the relative spread
    of their medians (on the log scale, normal quantile at ``level``, for the new run and the
    reference's mean) is added to the within-run half-width in quadrature."""
    if len(run_medians) < 2 or not (low > 0 and high > 0) or min(run_medians) <= 0:
        return ratio, low, high
    from scipy.stats import norm

    logs = [math.log(m) for m in run_medians]
    between = statistics.stdev(logs) * math.sqrt(1 + 1 / len(logs)) * float(norm.ppf(0.5 + level / 2))
    centre = math.log(ratio)
    below, above = centre - math.log(low), math.log(high) - centre
    return (ratio, math.exp(centre - math.hypot(below, between)), math.exp(centre + math.hypot(above, between)))


def check_record(record: Record, reference: Reference, tolerance: float = TOLERANCE,
                 confidence: float | None = None,
                 claims_now: Mapping[str, tuple[str, list[Any]]] | None = None) -> CaseCheck:
    """``record`` judged against its reference: see the module's docstring. ``confidence``:
    the interval's level (default: the record's own, corrected for its looks under
    ``--until-decided``)."""
    level = confidence or record.protocol.confidence or DEFAULT_CONFIDENCE
    if not 0.5 <= level < 1:    # a stored level of 1e-6 would make any spread "decide"
        level = DEFAULT_CONFIDENCE
    out = CaseCheck(record.case_id, case_label(record.workload.name, record.size, record.swept,
                                               record.backend.requested, record.launch.ranks, record.launch.threads),
                    "not ok", confidence=level)
    if not record.ok:
        out.reason = f"the case did not run ok ({record.status}: {record.reason[:200]})"
        return out
    problem = sample_problem(record)
    if problem or not record.samples:
        out.reason = f"this run's timings are no evidence: {problem or 'no samples'}"
        return out
    runs, why = reference.find(record)
    if not runs:
        out.status, out.reason = "no reference", why
        return out
    latest = runs[-1].record
    every = [s for r in runs for s in r.samples]
    pooled = bounded(every)
    out.reference_runs = [r.run_id for r in runs]
    out.differs = [c.text() for c in changes([provenance(latest)], [provenance(record)])]
    out.claims_changed = _claims_changed(latest, record, claims_now)
    ratio, low, high = widened(*ratio_of_medians(record.samples, pooled, level),
                               [statistics.median(r.samples) for r in runs], level)
    out.ratio, out.median_s = ratio, statistics.median(record.samples)
    out.reference_median_s = statistics.median(every)
    if min(len(record.samples), len(every)) < MIN_SAMPLES or math.isnan(low) or math.isnan(high):
        out.status = "inconclusive"
        out.reason = (f"{len(record.samples)} repeats here and {len(every)} in the reference: at least "
                      f"{MIN_SAMPLES} a side bound the ratio (--repeats, or --until-decided)")
        return out
    out.low, out.high = low, high
    limit = 1.0 + tolerance
    if high <= limit:
        out.status = "pass"
        out.reason = "as fast as the reference within the tolerance, or faster"
    elif low > limit:
        out.status = "fail"
        out.reason = f"slower than the reference by more than {tolerance:.0%}"
        if out.differs:
            out.reason += "; what differs: " + "; ".join(out.differs[:6])
    else:
        out.status = "inconclusive"
        out.reason = (f"the interval straddles {limit:g}: more repeats could decide it (--until-decided)")
    return out
