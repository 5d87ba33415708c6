"""``harness run --until-decided``: spend more repeats on cases whose claims are still inconclusive.

A case whose claims come out inconclusive runs again, in rounds that double its measured
repeats (5, 10, 20, ...) up to ``--max-repeats``, each round a fresh worker whose samples join
the record's, until every claim is decided or the time budget (shared by the whole run) is spent.

Looking at the data after every round and stopping once it decides would inflate false passes if
every look used the nominal level. So every look of an until-decided case uses the level
:func:`harness.judging.intervals.per_look_confidence` gives for the number of looks its plan allows
(Bonferroni over the looks): with 5 repeats doubling to at most 20 there are three looks, each
at 98.3 % for a nominal 95 %, and the chance of any false decision over them stays within 5 %.
A round never outlives the budget: its timeout is what remains of it (a round cut short is
discarded, and the record says the budget ran out).
"""
from __future__ import annotations

import dataclasses
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from harness.errors import UsageError
from harness.judging.intervals import DEFAULT_CONFIDENCE, per_look_confidence
from harness.plan import Case
from harness.protocol.stats import summarize
from harness.results.record import Record, Stats

DEFAULT_MAX_REPEATS = 20
DEFAULT_BUDGET_S = 600.0
_UNITS = {"": 1, "s": 1, "m": 60, "min": 60, "h": 3600}


def parse_duration(text: str) -> float:
    """``--budget``: '90', '90s', '10m' or '1.5h' as seconds (positive, finite)."""
    match = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*(s|m|min|h)?\s*", text or "")
    if not match:
        raise UsageError(f"--budget {text!r}: give a duration such as 600, 90s, 10m or 1.5h")
    seconds = float(match.group(1)) * _UNITS[match.group(2) or ""]
    if not 0 < seconds < 30 * 86400:
        raise UsageError(f"--budget {text!r}: must be more than 0 and under 30 days")
    return seconds


def planned_looks(repeats: int, max_repeats: int) -> int:
    """How many times a case's claims are judged when its repeats double up to ``max_repeats``."""
    looks, total = 1, repeats
    while total < max_repeats:
        total = min(max_repeats, 2 * total)
        looks += 1
    return looks


@dataclass
class Budget:
    """The run's allowance for extra rounds: repeats per case and seconds over all cases."""

    max_repeats: int = DEFAULT_MAX_REPEATS
    seconds: float = DEFAULT_BUDGET_S
    confidence: float = DEFAULT_CONFIDENCE   # the nominal level asked for
    spent_s: float = 0.0

    @property
    def left_s(self) -> float:
        return max(0.0, self.seconds - self.spent_s)

    def looks(self, case: Case) -> int:
        return planned_looks(case.repeats, max(case.repeats, self.max_repeats))

    def level(self, case: Case) -> float:
        """The level every look at ``case`` uses (Bonferroni over its planned looks)."""
        return per_look_confidence(self.confidence, self.looks(case))


def undecided_claims(record: Record) -> list[str]:
    """The inconclusive claims more repeats of this case could decide (their case side is
    replicated over repeats); those drawing on seeds or exact figures cannot be helped so."""
    return [v.text for v in record.claims
            if v.status == "inconclusive" and (v.evidence or {}).get("source", "repeats") == "repeats"]


def merge_round(record: Record, extra: Record, unstable_cov: float) -> None:
    """``extra``'s measured repeats (another launch or round) join ``record``'s: samples, per-rank
    samples, per-repeat metrics and per-seed replicates (the phase and comm summaries stay the
    first launch's); ``sample_launches`` numbers the launch each sample came from."""
    kept = record.sample_launches or [0] * len(record.samples)
    record.sample_launches = kept + [max(kept, default=-1) + 1] * len(extra.samples)
    record.samples = record.samples + extra.samples
    record.samples_per_rank = [a + b for a, b in zip(record.samples_per_rank, extra.samples_per_rank)]
    for key in {*record.metric_samples, *extra.metric_samples}:
        record.metric_samples[key] = record.metric_samples.get(key, []) + extra.metric_samples.get(key, [])
    for key, by_id in extra.replicates.items():
        kept = record.replicates.setdefault(key, {})
        for rid, value in by_id.items():
            kept.setdefault(rid, value)   # a seed the first round reported stays its replicate
    record.metrics = extra.metrics
    record.stats = Stats(**summarize(record.samples, unstable_cov))
    record.protocol.repeats = len(record.samples)
    record.duration_s += extra.duration_s


def until_decided(record: Record, case: Case, budget: Budget, execute: Callable[[Case], Record],
                  rejudge: Callable[[Record], None], unstable_cov: float,
                  progress: Callable[[str], None] = lambda _: None,
                  wanting: Callable[[Record], list[str]] = undecided_claims) -> None:
    """Rounds of more repeats for ``record`` until what ``wanting`` names (its inconclusive claims,
    by default) is decided, its repeats reach the budget's maximum, or the run's time budget is
    spent; the record says how it ended."""
    looks_planned = budget.looks(case)
    level = budget.level(case)
    record.protocol.confidence = level
    rejudge(record)
    info: dict[str, Any] = {"nominal_confidence": budget.confidence, "per_look_confidence": level,
                            "looks_planned": looks_planned, "looks": 1, "max_repeats": budget.max_repeats,
                            "budget_s": budget.seconds, "budget_exhausted": False, "stopped": ""}
    record.protocol.until_decided = info
    while True:
        if not record.ok:
            info["stopped"] = f"the case did not run ok ({record.status})"
            break
        still = wanting(record)
        if not still:
            undecided = [v for v in record.claims if v.status == "inconclusive"]
            info["stopped"] = ("decided" if not undecided else
                               "more repeats cannot help: the inconclusive claims draw on seeds or the baseline")
            break
        total = len(record.samples)
        if total >= budget.max_repeats:
            info["stopped"] = f"max repeats ({budget.max_repeats}) reached, still inconclusive"
            break
        estimate = record.duration_s * min(total, budget.max_repeats - total) / max(1, total)
        if budget.left_s < 1.0 or estimate > budget.left_s:
            info["stopped"] = (f"budget spent: {budget.left_s:.0f} s left of {budget.seconds:.0f} s, "
                               f"the next round needs about {estimate:.0f} s")
            info["budget_exhausted"] = True
            break
        more = min(total, budget.max_repeats - total)
        progress(f"inconclusive ({'; '.join(still)[:100]}): {more} more repeat(s)")
        round_case = dataclasses.replace(case, repeats=more, first_repeat=total,
                                         timeout=max(1.0, min(case.timeout, budget.left_s)))
        t0 = time.monotonic()
        extra = execute(round_case)
        budget.spent_s += time.monotonic() - t0
        if not extra.ok:
            info["stopped"] = f"round {info['looks'] + 1} did not run ok ({extra.status}: {extra.reason[:200]})"
            info["budget_exhausted"] = extra.status == "timeout" and round_case.timeout < case.timeout
            break
        merge_round(record, extra, unstable_cov)
        info["looks"] += 1
        rejudge(record)
    info["repeats"] = len(record.samples)
    info["budget_spent_s"] = round(budget.spent_s, 3)
