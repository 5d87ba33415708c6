"""Paper claims: what a workload asserts, the control under which it must fail, and verdicts.

A claim is ``metric comparison threshold`` on a case's metrics, optionally relative to a
baseline case of the same run. Every verdict has a status (``pass``, ``fail``,
``not_evaluated``, ``not_applicable``) set where it is decided, never inferred from text. A
workload that reports ``<metric>_se`` (a standard error) gets it carried onto the verdict.
A claim should name a :class:`Control`: a case under which it must come out ``fail``
(``harness controls`` runs them), because a claim that cannot fail tells its reader nothing.
"""
from __future__ import annotations

import math
import operator
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Literal

Status = Literal["pass", "fail", "not_evaluated", "not_applicable"]
STATUSES: tuple[Status, ...] = ("pass", "fail", "not_evaluated", "not_applicable")

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


def as_number(value: Any) -> float | None:
    """``value`` as a float when it is a real, non-NaN number (not a bool), else None."""
    if not isinstance(value, (int, float)) or isinstance(value, bool) or math.isnan(value):
        return None
    return float(value)


@dataclass(frozen=True)
class Control:
    """A case under which a claim must come out ``fail``: the proof that the claim can fail.

    ``params`` are the control case's params on top of the workload's ``smoke`` size (a key
    ``ranks`` sets its rank count). ``why`` says in a few words what the control breaks
    ("msf equal to the baseline's: no fewer Allreduce calls"). For a relative claim,
    ``baseline`` gives the baseline case's params the same way; default: ``params`` with the
    claim's ``relative_to`` swapped in. A control is judged with the claim's ``when`` and
    baseline rules set aside: it deliberately breaks the premise the claim relies on.
    """

    params: dict[str, Any]
    why: str
    baseline: dict[str, Any] | None = None

    def baseline_params(self, relative_to: dict[str, Any]) -> dict[str, Any]:
        return dict(self.baseline) if self.baseline is not None else {**self.params, **relative_to}

    def to_json(self) -> dict[str, Any]:
        return {"params": dict(self.params), "why": self.why,
                "baseline": None if self.baseline is None else dict(self.baseline)}


@dataclass(frozen=True)
class Claim:
    """A checkable statement from a paper: ``metric comparison threshold``.

    ``paper_value`` is what the paper reports (kept next to the measured value); ``source``
    says where in the paper it comes from (cite the paper or ``docs/papers.md``).

    A relative claim compares a case with its baseline case: ``relative_to={"msf": 1}`` names
    the baseline (same workload, size, backend, ranks, threads and other params, with these
    replaced; ``{"ranks": 1}`` compares with the single-rank case), and ``transform`` turns
    (value, baseline value) into the measured figure ("reduction", "speedup", "ratio" or
    "difference"). ``when={"msf": (">=", 64)}`` limits a claim to the cases it speaks about;
    elsewhere its verdict is ``not_applicable``. ``control`` names the case under which the
    claim must fail (see :class:`Control`).
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

    def __post_init__(self) -> None:
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

    def is_baseline(self, params: dict[str, Any]) -> bool:
        """True for the case a relative claim compares others with (params incl. ranks, threads)."""
        return self.relative_to is not None and all(params.get(k) == v for k, v in self.relative_to.items())

    def evaluate(self, metrics: dict[str, Any], params: dict[str, Any] | None = None,
                 baseline: dict[str, Any] | None = None) -> ClaimVerdict:
        """The verdict on one case; a missing figure is ``not_evaluated``, never a pass.

        ``params`` include ``ranks`` and ``threads``; ``baseline`` is the metrics of the baseline
        case, for a relative claim (None: not found in this run)."""
        params = params or {}
        why = self.applies(params)
        if why:
            return self._verdict("not_applicable", why)
        if self.relative_to is not None and self.is_baseline(params):
            return self._verdict("not_applicable", "this case is the baseline")
        return self._judge(metrics, baseline)

    def evaluate_control(self, metrics: dict[str, Any], baseline: dict[str, Any] | None = None) -> ClaimVerdict:
        """The verdict on this claim's control case (``when`` and the baseline rule set aside)."""
        verdict = self._judge(metrics, baseline)
        verdict.control = self.control.to_json() if self.control else None
        return verdict

    def _judge(self, metrics: dict[str, Any], baseline: dict[str, Any] | None) -> ClaimVerdict:
        value = as_number(metrics.get(self.metric))
        if value is None:
            return self._verdict("not_evaluated", f"metric {self.metric!r} was not reported by this case")
        measured, base = value, None
        if self.relative_to is not None:
            base = as_number((baseline or {}).get(self.metric))
            if base is None or base == 0 or (self.transform == "speedup" and value == 0):
                spec = ", ".join(f"{k}={v}" for k, v in self.relative_to.items())
                return self._verdict("not_evaluated", f"no usable baseline case with {spec} in this run: "
                                                      f"add {spec} to the sweep")
            measured = RELATIVE_TRANSFORMS[self.transform](value, base)
        ok = bool(COMPARISONS[self.comparison](measured, self.threshold))
        return self._verdict("pass" if ok else "fail", "", measured=measured,
                             value=value if base is not None else None, baseline_value=base,
                             standard_error=self._standard_error(metrics, baseline))

    def _standard_error(self, metrics: dict[str, Any], baseline: dict[str, Any] | None) -> float | None:
        """The measured figure's standard error when the case reports ``<metric>_se`` (for a
        difference: both cases' errors combined as independent; other transforms: None)."""
        se = as_number(metrics.get(f"{self.metric}_se"))
        if se is None or self.transform not in (None, "difference"):
            return None
        if self.transform is None:
            return se
        base_se = as_number((baseline or {}).get(f"{self.metric}_se"))
        return None if base_se is None else math.hypot(se, base_se)

    def _verdict(self, status: Status, reason: str, **figures: Any) -> ClaimVerdict:
        return ClaimVerdict(
            metric=self.metric, comparison=self.comparison, threshold=self.threshold,
            paper_value=self.paper_value, source=self.source, description=self.description,
            relative_to=self.relative_to, transform=self.transform,
            when={k: list(v) for k, v in self.when.items()} if self.when else None,
            status=status, reason=reason, has_control=self.control is not None, **figures)


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
    measured: float | None = None
    value: float | None = None            # the case's own figure, for a relative claim
    baseline_value: float | None = None   # the baseline case's figure, for a relative claim
    standard_error: float | None = None   # of measured, where the workload reports <metric>_se
    paper_value: float | str | None = None
    source: str = ""
    description: str = ""
    relative_to: dict[str, Any] | None = None
    transform: str | None = None
    when: dict[str, list[Any]] | None = None
    has_control: bool = False             # False: the plugin declared no control for this claim
    control: dict[str, Any] | None = None  # set on the verdict of a control run

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
    counts: dict[Status, int] = {s: 0 for s in STATUSES}
    for v in verdicts:
        counts[v.status] += 1
    return counts


def summarize_claims(verdicts: Iterable[ClaimVerdict]) -> str:
    """One line for tables and progress: ``2 pass, 1 fail, 1 not evaluated`` ('' when none)."""
    names = {"pass": "pass", "fail": "fail", "not_evaluated": "not evaluated", "not_applicable": "not applicable"}
    return ", ".join(f"{n} {names[s]}" for s, n in claim_counts(verdicts).items() if n)


@dataclass
class ControlOutcome:
    """What ``harness controls`` found for one claim: its control's verdict, and whether that is a fail."""

    workload: str
    claim: str
    why: str
    verdict: ClaimVerdict | None = None
    problem: str = ""                 # the control or baseline case did not run ok: why

    @property
    def caught(self) -> bool:
        """True when the claim failed under its control, as it must."""
        return self.verdict is not None and self.verdict.status == "fail"
