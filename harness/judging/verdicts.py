"""From replicates to a verdict: the interval a claim's kind needs and where it lies.

A figure's replicates (an :class:`~harness.judging.intervals.Arm`, and its baseline's for a relative
claim) give an interval at the asked level: a t-interval on a mean, a paired or Welch
t-interval on a difference, Fieller's on a ratio, Wilson's on a share of successes, clipped to
a bounded figure's range. The verdict is ``pass`` when the whole interval satisfies the claim's
comparison, ``fail`` when the whole interval violates it, ``inconclusive`` otherwise (also when
all replicates are equal and fewer than ``min_equal_n``, or a training behind the figure was
not at quality). :func:`rejudge` does it again at another level from the replicates a verdict
keeps. These rules know nothing of cases or runs (that is :mod:`harness.judging.case`), so
:class:`harness.judging.claims.Claim` can judge evidence directly.
"""
from __future__ import annotations

import math
import operator
import statistics
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any, Literal

from harness.judging.intervals import (Arm, Interval, difference_interval, level_text, mean_interval, proportion_interval,
                               ratio_interval, successes)

Status = Literal["pass", "fail", "inconclusive", "not_evaluated", "not_applicable", "premise_absent"]
VERDICTS: tuple[Status, ...] = ("pass", "fail", "inconclusive", "not_evaluated", "not_applicable",
                                "premise_absent")
# Replicates that are all equal give a zero-width interval: it decides only from this many. Why 5:
# 5 equal outcomes of 5 bound the share of runs that would come out otherwise below 45 % (one-sided
# 95 %, Clopper-Pearson: 1 - 0.05 ** (1/5)); 3 equal ones only below 63 %, "most runs" not shown.
# A claim on a figure that is the same in every run by construction declares it "exact" instead.
MIN_EQUAL_N = 5

COMPARISONS = {
    ">=": operator.ge,
    ">": operator.gt,
    "<=": operator.le,
    "<": operator.lt,
    "==": operator.eq,
}

RELATIVE_TRANSFORMS = {
    "reduction": lambda value, base: 1.0 - value / base,   # 0.98 = 98% less than the baseline
    "speedup": lambda value, base: base / value,           # 16 = 16x faster than the baseline
    "ratio": lambda value, base: value / base,
    "difference": lambda value, base: value - base,        # -0.01 = one point below the baseline
}


def claim_text(metric: str, comparison: str, threshold: float, transform: str | None,
               relative_to: dict[str, Any] | None) -> str:
    if transform:
        spec = ", ".join(f"{k}={v}" for k, v in (relative_to or {}).items())
        return f"{transform} of {metric} vs {spec} {comparison} {threshold:g}"
    return f"{metric} {comparison} {threshold:g}"


@dataclass
class ClaimVerdict:
    """One claim judged on one case, as the record keeps it."""

    metric: str
    comparison: str
    threshold: float
    status: Status
    reason: str = ""
    measured: float | None = None         # the point estimate the interval is about
    value: float | None = None            # the case's own figure, for a relative claim
    baseline_value: float | None = None   # the baseline case's figure, for a relative claim
    standard_error: float | None = None   # of measured, for an absolute claim with 2+ replicates
    interval: list[float | None] | None = None   # [low, high] of measured; None side: unbounded
    interval_method: str = ""             # how the interval was made, in words
    confidence: float | None = None       # its two-sided level (DEFAULT_CONFIDENCE unless asked)
    replicates: int | None = None         # replicates behind the case's figure
    baseline_replicates: int | None = None
    paired: bool | None = None            # relative claims: paired over shared seeds or not
    evidence: dict[str, Any] | None = None  # the replicate values judged (see rejudge)
    paper_value: float | str | None = None
    source: str = ""
    description: str = ""
    relative_to: dict[str, Any] | None = None
    transform: str | None = None
    when: dict[str, list[Any]] | None = None
    has_control: bool = False             # False: the plugin declared no control for this claim
    control: dict[str, Any] | None = None  # set on the verdict of a control run
    kind: str = "continuous"              # the inference the figure gets (KINDS)
    bounds: list[float] | None = None     # a bounded figure's [low, high]
    min_equal_n: int | None = None        # all-equal replicates decide only from this many
    premise: dict[str, Any] | None = None  # what the claim rests on (Premise.to_json)
    premise_verdict: dict[str, Any] | None = None  # the premise as judged in this run, when it did not hold
    at_quality: bool = False              # judged only where every training reached quality
    not_at_quality: str | None = None     # why not, where one stopped at its budget (then inconclusive)
    quality_guard: dict[str, Any] | None = None  # QualityGuard.judge: did both arms reach the same quality
    baseline_launch: dict[str, Any] | None = None  # how the baseline ran: ranks, threads, cores, the rule

    @property
    def passed(self) -> bool | None:
        """True/False when evaluated, None otherwise (the version-1 field)."""
        return {"pass": True, "fail": False}.get(self.status)

    @property
    def text(self) -> str:
        return claim_text(self.metric, self.comparison, self.threshold, self.transform, self.relative_to)

    def to_json(self) -> dict[str, Any]:
        out = {k: getattr(self, k) for k in self.__dataclass_fields__}
        out["passed"] = self.passed
        return out

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ClaimVerdict:
        known = {k: v for k, v in data.items() if k in cls.__dataclass_fields__}
        return cls(**known)


def claim_counts(verdicts: Iterable[ClaimVerdict]) -> dict[Status, int]:
    counts: dict[Status, int] = {s: 0 for s in VERDICTS}
    for v in verdicts:
        counts[v.status] += 1
    return counts


def summarize_claims(verdicts: Iterable[ClaimVerdict]) -> str:
    """One line for tables and progress: ``2 pass, 1 fail, 1 inconclusive`` ('' when none)."""
    return counts_text(claim_counts(verdicts))


def counts_text(counts: Mapping[str, int]) -> str:
    """``2 pass, 1 fail, 3 not applicable`` from verdict counts by status ('' when all are 0)."""
    names = {"pass": "pass", "fail": "fail", "inconclusive": "inconclusive", "not_evaluated": "not evaluated",
             "not_applicable": "not applicable", "premise_absent": "premise absent"}
    return ", ".join(f"{counts[s]} {names[s]}" for s in names if counts.get(s))


def as_arm(value: Any) -> Arm | None:
    """An :class:`Arm` from what callers hold: an Arm, a list of numbers (replicates over
    repeats) or one number (a single replicate); None when there is no number."""
    if isinstance(value, Arm):
        return value if value.values else None
    if isinstance(value, (list, tuple)):
        numbers = [as_number(v) for v in value]
        return Arm(tuple(numbers)) if numbers and all(n is not None for n in numbers) else None  # type: ignore[arg-type]
    number = as_number(value)
    return None if number is None else Arm((number,))


class NotANumber(str):
    """Evidence for a metric that was reported but is no figure a claim can judge: the text says
    what it was ("is a str ('fast'), not a finite number")."""


def not_a_number(value: Any) -> NotANumber:
    if isinstance(value, float):
        what = "NaN" if value != value else "infinite"
    elif isinstance(value, int) and not isinstance(value, bool):
        what = f"an integer of {len(str(abs(value)))} digits, too large for a float"
    else:
        what = f"a {type(value).__name__} ({str(value)[:40]!r})"
    return NotANumber(f"is {what}, not a finite number")


def as_number(value: Any) -> float | None:
    """``value`` as a finite float when it is a real number (not a bool), else None (an int too
    large for a float, NaN and the infinities are not figures a claim can judge)."""
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return None
    try:
        number = float(value)
    except OverflowError:
        return None
    return number if math.isfinite(number) else None



def transformed_interval(transform: str | None, case: Arm, base: Arm | None,
                         confidence: float) -> Interval | None:
    """The interval of a claim's measured figure: on the case's mean, or on the transform of the
    two arms (difference: paired or Welch t; ratio, speed-up, reduction: Fieller)."""
    if transform is None:
        return mean_interval(case, confidence)
    assert base is not None
    if transform == "difference":
        return difference_interval(case, base, confidence)
    if transform == "speedup":
        return ratio_interval(base, case, confidence)
    ratio = ratio_interval(case, base, confidence)
    if transform == "reduction" and ratio is not None:
        return ratio.mapped(lambda r: 1.0 - r, decreasing=True)
    return ratio


def decide(interval: Interval, comparison: str, threshold: float) -> Status:
    """``pass`` when the whole interval satisfies ``comparison threshold``, ``fail`` when the
    whole interval violates it, ``inconclusive`` otherwise (for ``==``: the interval is the
    threshold itself, or leaves it out)."""
    lo, hi = interval.low, interval.high
    if comparison == "==":
        return "pass" if lo == hi == threshold else "fail" if not lo <= threshold <= hi else "inconclusive"
    holds = COMPARISONS[comparison]
    if holds(lo, threshold) and holds(hi, threshold):
        return "pass"
    return "fail" if not (holds(lo, threshold) or holds(hi, threshold)) else "inconclusive"


def not_at_quality(evidence: Mapping[str, Any], baseline: Mapping[str, Any] | None) -> str | None:
    """Why a trained figure is not at quality (a training of the case or of its baseline stopped
    at its step budget, or the case did not say), or None when every training reached it."""
    from harness.judging.quality import REACHED_QUALITY

    problems = []
    for whose, found in (("the case's", evidence), ("the baseline's", baseline)):
        if found is None:
            continue
        arm = as_arm(found.get(REACHED_QUALITY))
        if arm is None:
            problems.append(f"{whose} trainings did not report {REACHED_QUALITY}")
        elif min(arm.values) < 1:
            short = sum(1 for v in arm.values if v < 1)
            problems.append(f"{short} of {arm.n} of {whose} trainings stopped at max_steps before a plateau "
                            "or the target")
    if not problems:
        return None
    return "not at quality: " + "; ".join(problems) + " (raise max_steps)"


def judge_arms(verdict: ClaimVerdict, case: Arm, base: Arm | None, confidence: float) -> ClaimVerdict:
    """``verdict`` decided from the replicates of the case (and its baseline): the interval at
    ``confidence`` that the claim's kind needs, and pass / fail / inconclusive from where it lies
    against the threshold."""
    if verdict.kind == "proportion":
        return _judge_proportion(verdict, case, confidence)
    interval = transformed_interval(verdict.transform, case, base, confidence)
    if interval is not None and verdict.bounds:
        interval = interval.clipped(*verdict.bounds)
    point = (case.mean if base is None
             else RELATIVE_TRANSFORMS[verdict.transform](case.mean, base.mean))  # type: ignore[index]
    out = replace(verdict, measured=point, value=case.mean if base is not None else None,
                  baseline_value=base.mean if base is not None else None, confidence=confidence,
                  replicates=case.n, baseline_replicates=base.n if base is not None else None,
                  evidence=_evidence_json(case, base), standard_error=None)
    if interval is None:
        thin = [arm for arm in (case, base) if arm is not None and not arm.exact and arm.n < 2]
        sides = " and ".join(("the baseline's " if arm is base else "")
                             + ("one seed" if arm.source == "seeds" else "one repeat") for arm in thin)
        out.status, out.interval, out.paired = "inconclusive", None, None
        out.interval_method = f"none ({sides or 'no usable spread'})"
        out.reason = (f"{sides}: one replicate cannot bound a figure that varies "
                      + ("(the workload reports it once per case)" if any(a.source == "seeds" for a in thin)
                         else "(--repeats 3 or more, or --until-decided)"))
        return out
    out.interval = [_bound(interval.low), _bound(interval.high)]
    out.interval_method, out.paired = interval.method, interval.paired
    if base is None and not case.exact and case.n >= 2:
        out.standard_error = statistics.stdev(case.values) / math.sqrt(case.n)
    out.status = decide(interval, verdict.comparison, verdict.threshold)
    out.reason = ("" if out.status != "inconclusive" else
                  f"the {level_text(confidence)} interval straddles the threshold {verdict.threshold:g}: "
                  "more replicates could decide it (--until-decided)")
    fewest = min(arm.n for arm in (case, base) if arm is not None and not arm.exact) if not (
        case.exact and (base is None or base.exact)) else None
    minimum = verdict.min_equal_n or MIN_EQUAL_N
    if interval.low == interval.high and fewest is not None and fewest < minimum and out.status != "inconclusive":
        out.status = "inconclusive"
        out.reason = (f"all {fewest} replicates are equal: a zero-width interval decides only from {minimum} "
                      f"(min_equal_n); more repeats or seeds could decide it")
    return _held_at_quality(out)


def _held_at_quality(verdict: ClaimVerdict) -> ClaimVerdict:
    """A decided verdict on a figure that is not at quality becomes ``inconclusive``: the
    interval stays for the reader, the decision waits for trainings that converged."""
    if verdict.not_at_quality and verdict.status in ("pass", "fail"):
        verdict.status, verdict.reason = "inconclusive", verdict.not_at_quality
    guard = verdict.quality_guard
    if guard and guard.get("held") is False and verdict.status == "pass":
        verdict.status, verdict.reason = "inconclusive", f"at lower quality than its baseline: {guard['why']}"
    return verdict


def _judge_proportion(verdict: ClaimVerdict, case: Arm, confidence: float) -> ClaimVerdict:
    """A share of successes (replicates of 0 or 1) judged with Wilson's interval."""
    k = successes(case)
    out = replace(verdict, confidence=confidence, replicates=case.n, evidence=_evidence_json(case, None),
                  standard_error=None, interval=None, paired=None)
    if k is None:
        out.status, out.interval_method = "not_evaluated", "none (not a proportion)"
        out.reason = (f"metric {verdict.metric!r} is a proportion claim's figure, so each replicate must be "
                      f"0 or 1; got {', '.join(f'{v:g}' for v in case.values[:5])}")
        return out
    interval = proportion_interval(case, confidence)
    assert interval is not None
    out.measured = interval.estimate
    out.interval, out.interval_method = [interval.low, interval.high], interval.method
    out.status = decide(interval, verdict.comparison, verdict.threshold)
    out.reason = ("" if out.status != "inconclusive" else
                  f"{k} of {case.n}: the {level_text(confidence)} interval on the share straddles "
                  f"{verdict.threshold:g}; more replicates could decide it (--until-decided)")
    return _held_at_quality(out)


def _bound(x: float) -> float | None:
    """An interval bound as JSON holds it: None for an unbounded side."""
    return float(x) if math.isfinite(x) else None


def _evidence_json(case: Arm, base: Arm | None) -> dict[str, Any]:
    out: dict[str, Any] = {"values": list(case.values), "source": case.source,
                           "ids": list(case.ids) if case.ids is not None else None}
    if case.launch_count > 1:
        out["launches"] = list(case.launches or ())
    if base is not None:
        out.update(baseline_values=list(base.values), baseline_source=base.source,
                   baseline_ids=list(base.ids) if base.ids is not None else None)
        if base.launch_count > 1:
            out["baseline_launches"] = list(base.launches or ())
    return out


def _arm_from_json(evidence: dict[str, Any], prefix: str = "") -> Arm | None:
    values = evidence.get(f"{prefix}values")
    if not values:
        return None
    ids = evidence.get(f"{prefix}ids")
    launches = evidence.get(f"{prefix}launches")
    return Arm(tuple(float(v) for v in values), evidence.get(f"{prefix}source") or "repeats",
               tuple(str(i) for i in ids) if ids is not None else None,
               tuple(int(i) for i in launches) if launches else None)


def rejudge(verdict: ClaimVerdict, confidence: float) -> ClaimVerdict:
    """``verdict`` judged again at another confidence level from the replicates it keeps
    (verdicts without them, such as those of older records, come back unchanged)."""
    if verdict.status not in ("pass", "fail", "inconclusive") or not verdict.evidence:
        return verdict
    case = _arm_from_json(verdict.evidence)
    base = _arm_from_json(verdict.evidence, "baseline_")
    if case is None or (verdict.transform is not None and base is None):
        return verdict
    return judge_arms(verdict, case, base, confidence)


