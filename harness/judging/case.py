"""Judging: a run's cases' claims decided, in one place.

The evidence a claim is judged on (:func:`evidence`: per metric, the replicates the workload's
``variation`` declares), the index of a run's ok records that relative claims and premises are
judged against (:class:`RunIndex`; which record is a case's baseline is
:mod:`harness.judging.baseline_rule`'s rule), how each baseline ran, and the downgrade of a time-sliced
case (:func:`judge_claims`). The rules that turn replicates into a verdict (the interval a
claim's kind needs, pass / fail / inconclusive, rejudging at another level) are
:mod:`harness.judging.verdicts`, which knows nothing of cases or runs; :mod:`harness.judging.claims` keeps what
a plugin author writes and reads: Claim, Control, Premise, QualityGuard and the verdict type.

A relative claim (``relative_to={"msf": 1}``) compares a case with the case that differs only in
those params (or in ``ranks``/``threads``). Its verdict is decided when the compared case's record
is built, so the baseline must have run earlier in the same run (or, with ``--resume``, before).
"""
from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from harness.judging.baseline_rule import baseline_of, is_baseline_for
from harness.judging.claims import Claim, ClaimVerdict, Premise
from harness.judging.intervals import DEFAULT_CONFIDENCE, Arm
from harness.results.record import Record
from harness.judging.verdicts import NotANumber, as_number, not_a_number

if TYPE_CHECKING:
    from harness.plan import Case
    from harness.workload import Workload


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
        :mod:`harness.judging.baseline_rule`, which planning uses too)."""
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
