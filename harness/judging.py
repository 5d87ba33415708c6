"""Judging: a case's claims decided from its replicates, in one place.

The evidence a claim is judged on (:func:`evidence`: per metric, the replicates the workload's
``variation`` declares), the interval each claim's kind needs and the verdict from where it lies
against the threshold (:func:`judge_arms`, :func:`decide`), the same again at another level from
the replicates a verdict keeps (:func:`rejudge`), the index of a run's ok records that relative
claims and premises are judged against (:class:`RunIndex`; which record is a case's baseline is
:mod:`harness.baseline_rule`'s rule), and the downgrade of a time-sliced case
(:func:`judge_claims`). :mod:`harness.claims` keeps what a plugin author writes and reads: Claim,
Control, Premise, QualityGuard and the verdict type.

A relative claim (``relative_to={"msf": 1}``) compares a case with the case that differs only in
those params (or in ``ranks``/``threads``). Its verdict is decided when the compared case's record
is built, so the baseline must have run earlier in the same run (or, with ``--resume``, before).
"""
from __future__ import annotations

import dataclasses
import math
import statistics
from collections.abc import Iterable, Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from harness.baseline_rule import baseline_of, is_baseline_for
from harness.claims import (MIN_EQUAL_N, RELATIVE_TRANSFORMS, COMPARISONS, Claim, ClaimVerdict, NotANumber, Premise,
                            Status, as_arm, as_number, not_a_number)
from harness.intervals import (DEFAULT_CONFIDENCE, Arm, Interval, difference_interval, level_text, mean_interval,
                               proportion_interval, ratio_interval, successes)
from harness.results.record import Record

if TYPE_CHECKING:
    from harness.plan import Case
    from harness.workload import Workload


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
    from harness.quality import REACHED_QUALITY

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
        verdict.status, verdict.reason = "inconclusive", f"faster at lower quality: {guard['why']}"
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


def evidence(metrics: dict[str, Any], samples: dict[str, list[Any]],
             replicates: dict[str, dict[str, float]], variation: dict[str, str],
             launches: list[int] | None = None) -> dict[str, Arm | NotANumber]:
    """The replicates claims are judged on, per metric, as the workload's ``variation`` declares
    them: the values over the measured repeats (default), the per-seed values it reported
    (``seeds``; one value when it reported none), or the value itself (``exact``). ``launches``
    names the worker launch of each repeat, for a case run with ``--launches``."""
    out: dict[str, Arm | NotANumber] = {}
    for key in {*metrics, *samples, *replicates}:
        source = variation.get(key, "repeats")
        if source == "seeds" and replicates.get(key):
            by_id = replicates[key]
            numbers = [as_number(v) for v in by_id.values()]
            if all(n is not None for n in numbers):
                out[key] = Arm(tuple(numbers), "seeds", tuple(by_id))  # type: ignore[arg-type]
            continue
        values = [as_number(v) for v in samples.get(key) or []]
        if not values or any(v is None for v in values):
            values = [as_number(metrics.get(key))]
        if values[0] is None:
            if metrics.get(key) is not None:   # reported, but as no number: say what it was
                out[key] = not_a_number(metrics[key])  # type: ignore[assignment]
            continue
        if source != "repeats":   # exact, or a per-seed figure reported once per repeat: one value
            values = values[-1:]
        groups = tuple(launches) if source == "repeats" and launches and len(launches) == len(values) else None
        out[key] = Arm(tuple(values), source, launches=groups)  # type: ignore[arg-type]
    return out


def record_evidence(record: Record, workload: Workload) -> dict[str, Arm | NotANumber]:
    launches = record.sample_launches if record.protocol.launches > 1 else None
    return evidence(record.metrics, record.metric_samples, record.replicates, workload.variation, launches)


class RunIndex:
    """The ok records of a run (and, with ``--resume``, of earlier runs), for relative claims."""

    def __init__(self, records: Iterable[Record] = ()) -> None:
        self._ok: list[Record] = []
        for r in records:
            self.add(r)

    def add(self, record: Record) -> None:
        if record.ok and not record.launch.oversubscribed:   # time-sliced figures judge nothing
            self._ok.append(record)

    @property
    def records(self) -> list[Record]:
        return list(self._ok)

    def baseline_record(self, case: Case, relative_to: dict[str, Any], cores: str = "equal") -> Record | None:
        """The latest ok record that is ``case``'s baseline under ``relative_to`` (the rule of
        :mod:`harness.baseline_rule`, which planning uses too)."""
        key = case.key
        return next((rec for rec in reversed(self._ok) if is_baseline_for(rec.key, key, relative_to, cores)), None)

    def baseline_evidence(self, case: Case, relative_to: dict[str, Any],
                          workload: Workload) -> dict[str, Arm] | None:
        """The replicates of the latest ok record that is ``case``'s baseline under ``relative_to``."""
        rec = self.baseline_record(case, relative_to)
        return None if rec is None else record_evidence(rec, workload)

    def verdicts(self, case: Case, workload: Workload, record: Record,
                 confidence: float = DEFAULT_CONFIDENCE) -> list[ClaimVerdict]:
        """Every claim of ``workload`` judged on ``record``'s replicates at ``confidence``,
        relative ones against this index."""
        params = case.key.judged_params
        arms = record_evidence(record, workload)
        out = []
        for claim in workload.claims:
            verdict = self._judge(claim, case, arms, params, workload, confidence)
            if claim.premise is not None and verdict.status in ("pass", "fail", "inconclusive"):
                verdict = self._with_premise(verdict, claim.premise, case, workload, confidence)
            out.append(verdict)
        return out

    def _judge(self, claim: Claim, case: Case, arms: dict[str, Any], params: dict[str, Any], workload: Workload,
               confidence: float) -> ClaimVerdict:
        if not claim.relative_to:
            return claim.evaluate(arms, params, None, confidence)
        rec = self.baseline_record(case, claim.relative_to, claim.cores)
        verdict = claim.evaluate(arms, params, None if rec is None else record_evidence(rec, workload), confidence)
        if "ranks" not in claim.relative_to:
            return verdict
        if rec is not None:
            verdict.baseline_launch = baseline_launch(case, rec, claim.cores)
            return verdict
        _, ranks, threads = baseline_of(case.key, claim.relative_to, claim.cores)
        if verdict.status == "not_evaluated" and threads:
            which = "the case's cores" if claim.cores == "equal" else "the case's threads per rank"
            verdict.reason += (f" (a baseline of {ranks} rank(s) x {threads} thread(s): {which}, "
                               f"--ranks {ranks} --threads {threads})")
        return verdict

    def _with_premise(self, verdict: ClaimVerdict, premise: Premise, case: Case, workload: Workload,
                      confidence: float) -> ClaimVerdict:
        """``verdict`` where its premise holds in this run; ``premise_absent`` (with the premise's
        figure) where the premise was not decided ``pass``; ``not_evaluated`` where its case is missing."""
        want, ranks, threads = baseline_of(case.key, premise.case)
        premise_case = dataclasses.replace(case, params=want, ranks=ranks, threads=threads or case.threads)
        arms = self.baseline_evidence(case, premise.case, workload)
        spec = ", ".join(f"{k}={v}" for k, v in premise.case.items())
        if arms is None:
            return dataclasses.replace(
                verdict, status="not_evaluated",
                reason=f"its premise ({premise.claim.text}) is judged on the case with {spec}, not in this run: "
                       f"add {spec} to the sweep")
        held = self._judge(premise.claim, premise_case, arms, premise_case.key.judged_params, workload, confidence)
        if held.status == "pass":
            return verdict
        interval = held.interval or [None, None]
        figure = ("no figure" if held.measured is None else
                  f"{held.measured:.4g} [{_text(interval[0])}, {_text(interval[1])}]")
        return dataclasses.replace(
            verdict, status="premise_absent",
            premise_verdict={"status": held.status, "measured": held.measured, "interval": held.interval,
                             "interval_method": held.interval_method, "reason": held.reason},
            reason=f"{premise.claim.text} came out {held.status.replace('_', ' ')} on the case "
                   f"with {spec} ({figure}); {premise.why}")


def baseline_launch(case: Case, baseline: Record, rule: str) -> dict[str, Any]:
    """How a rank-count baseline ran against the case it judges: its ranks, threads and cores,
    the case's cores, and the claim's rule; ``equal_cores`` says whether the two had as many."""
    cores, case_cores = baseline.launch.ranks * baseline.launch.threads, case.ranks * case.threads
    return {"ranks": baseline.launch.ranks, "threads": baseline.launch.threads, "cores": cores,
            "case_cores": case_cores, "equal_cores": cores == case_cores, "rule": rule}


def _text(bound: float | None) -> str:
    return "unbounded" if bound is None else f"{bound:.4g}"


def judge_claims(record: Record, case: Case, workload: Workload, index: RunIndex) -> None:
    """Every claim of ``workload`` judged on the record's replicates (relative claims against the
    run's ``index``); a time-sliced case (oversubscribed cores) judges nothing: its verdicts are
    ``not_evaluated`` with the reason, whatever the figures said."""
    record.claims = index.verdicts(case, workload, record, record.protocol.confidence)
    if record.launch.oversubscribed:
        for verdict in record.claims:
            if verdict.status in ("pass", "fail", "inconclusive"):
                verdict.status, verdict.reason = "not_evaluated", record.launch.oversubscribed
                verdict.measured = verdict.value = verdict.baseline_value = verdict.standard_error = None
                verdict.interval = verdict.evidence = None
