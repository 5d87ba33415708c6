"""Paper claims: what a workload asserts, the control under which it must fail, and verdicts.

A claim is ``metric comparison threshold`` on a case's metrics, optionally relative to a
baseline case of the same run. A verdict is only as good as its interval: every evaluated claim
gets a two-sided confidence interval (:mod:`harness.judging.intervals`) from the metric's replicates, and
is ``pass`` when the whole interval satisfies the comparison, ``fail`` when the whole interval
violates it, ``inconclusive`` otherwise (``not_evaluated`` and ``not_applicable`` when it cannot be
or need not be judged). The status is set where it is decided, never inferred from text; the
verdict keeps the interval, its method, level and replicate count, and the replicate values
themselves, so a reader can judge it again at another level (:func:`rejudge`).
Each claim's figure gets the inference its kind needs (``kind``): ``continuous`` (t, paired t,
Fieller), ``proportion`` (replicates that are 0 or 1, judged as a share with Wilson's interval) or
``bounded`` (an interval clipped to the figure's ``bounds``). Replicates that are all equal give a
zero-width interval, which decides only from ``min_equal_n`` replicates (:data:`MIN_EQUAL_N`).
A claim may rest on a :class:`Premise` (SmoothOut recovers what K-FAC lost: only if K-FAC lost
something); where the premise does not hold the verdict is ``premise_absent``, not ``fail``.
A claim should name a :class:`Control`: a case under which it must come out ``fail``
(``harness controls`` runs them), because a claim that cannot fail tells its reader nothing.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from harness.judging.baseline_rule import is_baseline
from harness.judging.intervals import DEFAULT_CONFIDENCE
from harness.judging.verdicts import (COMPARISONS, MIN_EQUAL_N, RELATIVE_TRANSFORMS, ClaimVerdict, NotANumber, Status, as_arm,
                                      claim_text, judge_arms, not_at_quality)
# ClaimVerdict and claim_text are defined with their rules in verdicts.py (claims -> verdicts, no
# circle) and importable from here, beside the claims they judge.
__all__ = ["CONTROL_KINDS", "CORE_RULES", "KINDS", "POINT_ESTIMATE", "Claim", "ClaimVerdict", "Control",
           "ControlOutcome", "Premise", "QualityGuard", "claim_text"]

KINDS = ("continuous", "proportion", "bounded")
CONTROL_KINDS = ("ablation", "sanity")
CORE_RULES = ("equal", "per_rank")   # a rank-count baseline's cores: the case's total, or its per-rank threads
POINT_ESTIMATE = "point estimate (judged without an interval, before record schema 3)"


@dataclass(frozen=True)
class Control:
    """A case under which a claim must come out ``fail``: the proof that the claim can fail.

    ``params`` are the control case's params on top of the workload's ``smoke`` size (a key
    ``ranks`` sets its rank count, ``repeats`` the fewest repeats it runs: Wilson's interval on
    0 of 3 chains still reaches one half, so a proportion's control needs more). ``why`` says in a few words what the control breaks
    ("msf equal to the baseline's: no fewer Allreduce calls"). For a relative claim,
    ``baseline`` gives the baseline case's params the same way; default: ``params`` with the
    claim's ``relative_to`` swapped in. A control is judged with the claim's ``when`` and
    baseline rules set aside: it deliberately breaks the premise the claim relies on.

    ``kind`` says what its failing shows: ``"ablation"`` removes only the paper's mechanism (the
    same msf with communication made free: a speed-up that survives is not the mechanism's), so
    a pass under it would say the claim measures something else; ``"sanity"`` (the default)
    breaks the case outright or compares a case with itself (no training, inverted labels, A/A),
    which shows only that the check can fail.
    """

    params: dict[str, Any]
    why: str
    baseline: dict[str, Any] | None = None
    kind: str = "sanity"

    def __post_init__(self) -> None:
        if self.kind not in CONTROL_KINDS:
            raise ValueError(f"Control kind must be one of {', '.join(CONTROL_KINDS)}, not {self.kind!r}")

    def baseline_params(self, relative_to: dict[str, Any]) -> dict[str, Any]:
        return dict(self.baseline) if self.baseline is not None else {**self.params, **relative_to}

    def to_json(self) -> dict[str, Any]:
        return {"params": dict(self.params), "why": self.why, "kind": self.kind,
                "baseline": None if self.baseline is None else dict(self.baseline)}


@dataclass(frozen=True)
class Premise:
    """What a claim rests on: ``claim`` must pass on the case reached by replacing ``case`` in the
    judged case's params (SmoothOut's claim rests on plain K-FAC losing to SGD, judged on the
    ``{"smoothing": "none"}`` case). That case must run before the claim's case (it is usually
    the claim's own baseline). ``why`` says in a few words why the claim needs it."""

    claim: Claim
    case: dict[str, Any]
    why: str

    @property
    def text(self) -> str:
        spec = ", ".join(f"{k}={v}" for k, v in self.case.items())
        return f"{self.claim.text} on the case with {spec}"

    def to_json(self) -> dict[str, Any]:
        return {"claim": self.claim.text, "case": dict(self.case), "why": self.why}


@dataclass(frozen=True)
class QualityGuard:
    """A speed comparison counts only where the faster arm trained as well as the slower one (in
    small, MLPerf's convergence check: a faster result must not come from stopping at lower
    quality). ``metric`` is the quality figure both arms report, ``tolerance`` how far below the
    baseline's mean the case's may be (in the metric's unit; ``higher_is_better=False`` for a loss)."""

    metric: str
    tolerance: float
    higher_is_better: bool = True

    def judge(self, evidence: Mapping[str, Any], baseline: Mapping[str, Any] | None) -> dict[str, Any]:
        """{"metric", "case", "baseline", "tolerance", "held", "why"}: held None where a side has no figure."""
        case, base = as_arm(evidence.get(self.metric)), as_arm((baseline or {}).get(self.metric))
        out: dict[str, Any] = {"metric": self.metric, "tolerance": self.tolerance,
                               "case": case.mean if case else None, "baseline": base.mean if base else None}
        if case is None or base is None:
            whose = " and ".join(w for w, a in (("the case", case), ("the baseline", base)) if a is None)
            out.update(held=None, why=f"not checked: {whose} reported no {self.metric}")
            return out
        worse = (base.mean - case.mean) if self.higher_is_better else (case.mean - base.mean)
        out["held"] = worse <= self.tolerance
        out["why"] = (f"{self.metric} {case.mean:.4g} vs the baseline's {base.mean:.4g}: "
                      + ("the same quality" if out["held"] else "lower quality")
                      + f" (tolerance {self.tolerance:g})")
        return out


@dataclass(frozen=True)
class Claim:
    """A checkable statement from a paper: ``metric comparison threshold``.

    ``paper_value`` is what the paper reports (kept next to the measured value); ``source``
    says where in the paper it comes from (cite the paper or ``docs/workloads/``).

    A relative claim compares a case with its baseline case: ``relative_to={"msf": 1}`` names
    the baseline (same workload, size, backend, ranks, threads and other params, with these
    replaced; ``{"ranks": 1}`` compares with the single-rank case), and ``transform`` turns
    (value, baseline value) into the measured figure ("reduction", "speedup", "ratio" or
    "difference"). ``when={"msf": (">=", 64)}`` limits a claim to the cases it speaks about
    (keys: params, ``ranks``, ``threads`` and ``size``, the size's name); elsewhere its verdict is
    ``not_applicable``. ``control`` names the case under which the
    claim must fail (see :class:`Control`).

    ``kind`` says which inference the figure needs: ``continuous`` (the default), ``proportion``
    (each replicate is 0 or 1, e.g. one per chain; the threshold is a share: ``">=", 0.5`` is
    "most chains") or ``bounded`` (``bounds=(0, 1)``: the interval never leaves them).
    ``min_equal_n``: replicates that are all equal decide only from this many (:data:`MIN_EQUAL_N`).
    ``premise``: what the claim rests on (:class:`Premise`); where it does not hold, the verdict
    is ``premise_absent``.
    ``at_quality``: the figure is a trained network's, and means something only where every
    training of the case (and of its baseline) stopped at its quality target or a plateau
    (:mod:`harness.judging.quality`); where one hit its step budget first, the verdict is ``inconclusive``.
    ``guard``: for a relative speed claim, the :class:`QualityGuard` that both arms reached the
    same quality; where the case's is lower, a pass becomes ``inconclusive``.
    ``cores``: how a baseline at another rank count (``relative_to={"ranks": 1}``) is threaded:
    ``"equal"`` (the default) gives it the case's total cores (2 ranks x 1 thread against 1 rank x
    2 threads); ``"per_rank"`` the case's threads per rank (2 x 1 against 1 x 1: a speed-up from
    adding ranks, with their cores; say so in ``source``). The verdict records how the baseline ran.
    """

    metric: str
    comparison: str
    threshold: float
    paper_value: float | str | None = None
    source: str = ""
    description: str = ""
    relative_to: dict[str, Any] | None = None
    transform: str | None = None
    when: dict[str, tuple[str, Any]] | None = None
    control: Control | None = None
    kind: str = "continuous"
    bounds: tuple[float, float] | None = None
    min_equal_n: int = MIN_EQUAL_N
    premise: Premise | None = None
    at_quality: bool = False
    guard: QualityGuard | None = None
    cores: str = "equal"

    def __post_init__(self) -> None:
        if self.cores not in CORE_RULES:
            raise ValueError(f"Claim cores must be one of {', '.join(CORE_RULES)}, not {self.cores!r}")
        if self.kind not in KINDS:
            raise ValueError(f"Claim kind must be one of {', '.join(KINDS)}, not {self.kind!r}")
        if (self.kind == "bounded") != (self.bounds is not None):
            raise ValueError("a bounded Claim needs bounds=(low, high), and only a bounded one has them")
        if self.bounds is not None and not (len(self.bounds) == 2 and self.bounds[0] < self.bounds[1]):
            raise ValueError(f"Claim bounds must be (low, high) with low < high, not {self.bounds!r}")
        if self.kind == "proportion" and (self.transform is not None or not 0 <= self.threshold <= 1):
            raise ValueError("a proportion Claim is absolute (no relative_to) with a threshold share in [0, 1]")
        if not isinstance(self.min_equal_n, int) or self.min_equal_n < 2:
            raise ValueError("Claim min_equal_n must be an integer of 2 or more")
        if self.premise is not None and not isinstance(self.premise, Premise):
            raise TypeError("Claim premise must be a harness.Premise")
        if self.comparison not in COMPARISONS:
            raise ValueError(f"Claim comparison must be one of {', '.join(COMPARISONS)}")
        if (self.relative_to is None) != (self.transform is None):
            raise ValueError("a relative Claim needs both relative_to and transform")
        if self.transform is not None and self.transform not in RELATIVE_TRANSFORMS:
            raise ValueError(f"Claim transform must be one of {', '.join(RELATIVE_TRANSFORMS)}")
        for key, (op, _) in (self.when or {}).items():
            if op not in COMPARISONS:
                raise ValueError(f"Claim when[{key!r}] comparison must be one of {', '.join(COMPARISONS)}")
        if self.control is not None and not isinstance(self.control, Control):
            raise TypeError("Claim control must be a harness.Control")
        if self.guard is not None and (not isinstance(self.guard, QualityGuard) or self.relative_to is None):
            raise TypeError("Claim guard must be a harness.QualityGuard, on a relative claim")

    @property
    def text(self) -> str:
        """The claim as one line: ``speedup of train_s vs msf=1 >= 5``."""
        return claim_text(self.metric, self.comparison, self.threshold, self.transform, self.relative_to)

    def applies(self, params: dict[str, Any]) -> str:
        """'' when the claim speaks about a case with these params, else why not."""
        for key, (op, bound) in (self.when or {}).items():
            if key in params and not COMPARISONS[op](params[key], bound):
                return f"applies only when {key} {op} {bound} (here {key}={params[key]})"
        return ""

    def evaluate(self, evidence: Mapping[str, Any], params: dict[str, Any] | None = None,
                 baseline: Mapping[str, Any] | None = None,
                 confidence: float = DEFAULT_CONFIDENCE) -> ClaimVerdict:
        """The verdict on one case; a missing figure is ``not_evaluated``, never a pass.

        ``evidence`` maps metric names to :class:`~harness.judging.intervals.Arm` replicates (a list of
        numbers or one number also do: replicates over repeats, or a single one); ``params``
        include ``ranks`` and ``threads``; ``baseline`` is the baseline case's evidence, for a
        relative claim (None: not found in this run)."""
        params = params or {}
        why = self.applies(params)
        if why:
            return self._verdict("not_applicable", why)
        if is_baseline(self.relative_to, params):
            return self._verdict("not_applicable", "this case is the baseline")
        return self._judge(evidence, baseline, confidence)

    def evaluate_control(self, evidence: Mapping[str, Any], baseline: Mapping[str, Any] | None = None,
                         confidence: float = DEFAULT_CONFIDENCE) -> ClaimVerdict:
        """The verdict on this claim's control case (``when`` and the baseline rule set aside)."""
        verdict = self._judge(evidence, baseline, confidence)
        verdict.control = self.control.to_json() if self.control else None
        return verdict

    def _judge(self, evidence: Mapping[str, Any], baseline: Mapping[str, Any] | None,
               confidence: float) -> ClaimVerdict:
        raw = evidence.get(self.metric)
        if isinstance(raw, NotANumber):
            return self._verdict("not_evaluated", f"metric {self.metric!r} {raw}")
        case = as_arm(raw)
        if case is None:
            return self._verdict("not_evaluated", f"metric {self.metric!r} was not reported by this case")
        base = None
        if self.relative_to is not None:
            base = as_arm((baseline or {}).get(self.metric))
            if base is None or base.mean == 0 or (self.transform == "speedup" and case.mean == 0):
                spec = ", ".join(f"{k}={v}" for k, v in self.relative_to.items())
                return self._verdict("not_evaluated", f"no usable baseline case with {spec} in this run: "
                                                      f"add {spec} to the sweep")
        verdict = self._verdict("not_evaluated", "")
        if self.at_quality:
            verdict.not_at_quality = not_at_quality(evidence, baseline if self.relative_to is not None else None)
        if self.guard is not None:
            verdict.quality_guard = self.guard.judge(evidence, baseline)
        return judge_arms(verdict, case, base, confidence)

    def _verdict(self, status: Status, reason: str) -> ClaimVerdict:
        return ClaimVerdict(
            metric=self.metric, comparison=self.comparison, threshold=self.threshold,
            paper_value=self.paper_value, source=self.source, description=self.description,
            relative_to=self.relative_to, transform=self.transform,
            when={k: list(v) for k, v in self.when.items()} if self.when else None,
            status=status, reason=reason, has_control=self.control is not None, kind=self.kind,
            bounds=list(self.bounds) if self.bounds else None, min_equal_n=self.min_equal_n,
            premise=self.premise.to_json() if self.premise else None, at_quality=self.at_quality)


@dataclass
class ControlOutcome:
    """What ``harness controls`` found for one claim: its control's verdict, and whether that is a fail."""

    workload: str
    claim: str
    why: str
    verdict: ClaimVerdict | None = None
    problem: str = ""                 # the control or baseline case did not run ok: why
    kind: str = ""                    # the control's kind (ablation / sanity); "" where none is declared

    @property
    def caught(self) -> bool:
        """True when the claim was decided ``fail`` under its control, as it must be (an
        inconclusive control proves nothing)."""
        return self.verdict is not None and self.verdict.status == "fail"

    @property
    def inconclusive(self) -> bool:
        return self.verdict is not None and self.verdict.status == "inconclusive"
