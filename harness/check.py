"""Is this node as fast as its kind? Each case of a run judged against a reference of the same
machine kind and the same work.

A reference is any results folder or capture (``gallery/<machine>``, a ``harness capture`` of an
accepted node): nothing is typed by hand. A case is matched with the reference's record of the
same machine key (:mod:`harness.hardware.identity`), the same case (:class:`~harness.baseline_rule.CaseKey`:
workload, size, params, backend asked for, ranks x threads) and the same workload version (the
plugin's code and protocol); anything else is "no reference", never a pass. The figure is the ratio
of median seconds per repeat (this run / the reference's runs, pooled) with a bootstrap interval
(:func:`harness.intervals.ratio_of_medians`, as ``harness compare``), widened by the spread
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

from harness.baseline_rule import CaseKey
from harness.current_claims import current_verdicts
from harness.history.provenance import changes, provenance
from harness.intervals import DEFAULT_CONFIDENCE, ratio_of_medians
from harness.plan import case_label
from harness.results.record import Record

TOLERANCE = 0.10
MIN_SAMPLES = 3      # fewer repeats on a side give no interval worth deciding on
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


class Reference:
    """The ok records of a reference, by machine key, case and workload version. A case the
    reference ran several times (a capture resumed or rerun, runs appended to one folder) is
    judged against all of them: their samples pooled, so the reference carries the machine's
    run-to-run variation and not only one run's noise; its latest run names the conditions."""

    def __init__(self, records: Iterable[Record]) -> None:
        self.runs: dict[tuple, list[Record]] = {}
        self.machines: dict[str, str] = {}      # key -> label
        self.versions: dict[tuple, set[str]] = {}
        for r in sorted((r for r in records if r.ok and r.samples), key=lambda r: r.created):
            self.machines[r.machine_key] = r.machine
            self.runs.setdefault((r.machine_key, _case_key(r.key), r.work_version), []).append(r)
            self.versions.setdefault((r.machine_key, _case_key(r.key)), set()).add(r.work_version)

    def __len__(self) -> int:
        return len(self.runs)

    def find(self, record: Record) -> tuple[list[Record], str]:
        """(the reference's runs of this record's case, oldest first, '') or ([], why there are none)."""
        if record.machine_key not in self.machines:
            kinds = ", ".join(f"{label} [{k}]" for k, label in sorted(self.machines.items())) or "none"
            return [], (f"the reference holds no machine of this one's key ({record.machine} "
                        f"[{record.machine_key}]; it holds: {kinds})")
        runs = self.runs.get((record.machine_key, _case_key(record.key), record.work_version), [])
        return runs, "" if runs else self._missing(record.machine_key, record.key, record.work_version)

    def runs_of(self, key: CaseKey, version: str) -> list[Record]:
        """The runs of a planned case at a workload version, on whichever machine the reference
        holds (a capture holds one)."""
        return [r for (machine, case, v), runs in self.runs.items()
                if case == _case_key(key) and v == version for r in runs]

    def missing(self, key: CaseKey, version: str) -> str:
        """Why :meth:`runs_of` found nothing."""
        return "; ".join(self._missing(m, key, version) for m in sorted(self.machines)) or "an empty reference"

    def _missing(self, machine: str, key: CaseKey, version: str) -> str:
        versions = self.versions.get((machine, _case_key(key)))
        if versions:
            return (f"other work: the reference ran workload version {', '.join(sorted(versions))}, "
                    f"this run {version or 'unknown'}")
        return "the reference did not run this case on this machine kind"


def _claims_changed(reference: Record, record: Record,
                    claims_now: Mapping[str, tuple[str, list[Any]]] | None = None) -> list[str]:
    """'claim: pass -> fail' per claim whose verdict differs, both sides judged by the claims of
    the code that reads them where the records are of its protocol version (harness.current_claims)."""
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
    out = CaseCheck(record.case_id, case_label(record.workload.name, record.size, record.swept,
                                               record.backend.requested, record.launch.ranks, record.launch.threads),
                    "not ok", confidence=level)
    if not record.ok:
        out.reason = f"the case did not run ok ({record.status}: {record.reason[:200]})"
        return out
    runs, why = reference.find(record)
    if not runs:
        out.status, out.reason = "no reference", why
        return out
    latest = runs[-1]
    pooled = [s for r in runs for s in r.samples]
    out.reference_runs = [r.run_id for r in runs]
    out.differs = [c.text() for c in changes([provenance(latest)], [provenance(record)])]
    out.claims_changed = _claims_changed(latest, record, claims_now)
    ratio, low, high = widened(*ratio_of_medians(record.samples, pooled, level),
                               [statistics.median(r.samples) for r in runs], level)
    out.ratio, out.median_s = ratio, statistics.median(record.samples)
    out.reference_median_s = statistics.median(pooled)
    if min(len(record.samples), len(pooled)) < MIN_SAMPLES or math.isnan(low) or math.isnan(high):
        out.status = "inconclusive"
        out.reason = (f"{len(record.samples)} repeats here and {len(pooled)} in the reference: at least "
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
