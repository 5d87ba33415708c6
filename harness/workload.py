"""The workload contract: what a paper's benchmark declares and how it runs one repeat."""
from __future__ import annotations

import importlib.util
import math
import operator
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from harness.errors import UsageError, did_you_mean
from harness.params import Param

if TYPE_CHECKING:
    from harness.protocol.context import RunContext

SIZES = ("smoke", "small", "paper")

_COMPARISONS = {
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


def _number(value: Any) -> float | None:
    if not isinstance(value, (int, float)) or isinstance(value, bool) or math.isnan(value):
        return None
    return float(value)


@dataclass(frozen=True)
class Claim:
    """A checkable statement from a paper: ``metric comparison threshold``.

    ``paper_value`` is what the paper reports (kept next to the measured value);
    ``source`` says where in the paper it comes from.

    A relative claim compares a case with its baseline case: ``relative_to={"msf": 1}``
    names the baseline (same workload, size, backend, ranks, threads and other params, with
    these params replaced; ``{"ranks": 1}`` compares with the single-rank case), and ``transform`` turns (value, baseline value) into the measured
    figure ("reduction", "speedup", "ratio" or "difference"). ``when={"msf": (">=", 64)}`` limits a claim to
    the cases it speaks about; elsewhere it is recorded as not applicable.
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

    def __post_init__(self) -> None:
        if self.comparison not in _COMPARISONS:
            raise ValueError(f"Claim comparison must be one of {', '.join(_COMPARISONS)}")
        if (self.relative_to is None) != (self.transform is None):
            raise ValueError("a relative Claim needs both relative_to and transform")
        if self.transform is not None and self.transform not in RELATIVE_TRANSFORMS:
            raise ValueError(f"Claim transform must be one of {', '.join(RELATIVE_TRANSFORMS)}")
        for key, (op, _) in (self.when or {}).items():
            if op not in _COMPARISONS:
                raise ValueError(f"Claim when[{key!r}] comparison must be one of {', '.join(_COMPARISONS)}")

    def applies(self, params: dict[str, Any]) -> str:
        """'' when the claim speaks about a case with these params, else why not."""
        for key, (op, bound) in (self.when or {}).items():
            if key in params and not _COMPARISONS[op](params[key], bound):
                return f"applies only when {key} {op} {bound} (here {key}={params[key]})"
        return ""

    def is_baseline(self, params: dict[str, Any]) -> bool:
        """True for the case a relative claim compares others with (params incl. ranks, threads)."""
        return self.relative_to is not None and all(params.get(k) == v for k, v in self.relative_to.items())

    def evaluate(self, metrics: dict[str, Any], params: dict[str, Any] | None = None,
                 baseline: dict[str, Any] | None = None) -> dict[str, Any]:
        """The verdict as a record fragment; a missing figure is 'not evaluated', never a pass.

        ``baseline`` is the metrics of the baseline case, for a relative claim (None: not found).
        """
        verdict = asdict(self)
        verdict.update(measured=None, passed=None, reason="", value=None, baseline_value=None)
        params = params or {}
        why = self.applies(params)
        if why:
            verdict["reason"] = f"not applicable: {why}"
            return verdict
        value = _number(metrics.get(self.metric))
        if value is None:
            verdict["reason"] = f"metric {self.metric!r} was not reported by this case"
            return verdict
        measured = value
        if self.relative_to is not None:
            if self.is_baseline(params):
                verdict["reason"] = "not applicable: this case is the baseline"
                return verdict
            base = _number((baseline or {}).get(self.metric))
            if base is None or base == 0 or (self.transform == "speedup" and value == 0):
                spec = ", ".join(f"{k}={v}" for k, v in self.relative_to.items())
                verdict["reason"] = (f"no usable baseline case with {spec} in this run: "
                                     f"add {spec} to the sweep")
                return verdict
            measured = RELATIVE_TRANSFORMS[self.transform](value, base)
            verdict.update(value=value, baseline_value=base)
        verdict.update(measured=measured, passed=bool(_COMPARISONS[self.comparison](measured, self.threshold)))
        return verdict


class Workload:
    """Base class of every workload plugin. Subclass it and set the class attributes.

    The harness calls ``setup(ctx)`` once (untimed), then ``run(ctx)`` for every warmup
    and measured repeat (each one timed), then ``teardown(ctx)``. ``run`` returns a dict
    of metrics (numbers or short strings); the metrics of the last repeat are recorded.
    """

    name: ClassVar[str] = ""
    paper: ClassVar[str] = ""
    description: ClassVar[str] = ""
    frameworks: ClassVar[tuple[str, ...]] = ()
    requires: ClassVar[tuple[str, ...]] = ()
    params: ClassVar[dict[str, Param]] = {}
    sizes: ClassVar[dict[str, dict[str, Any]]] = {"smoke": {}, "small": {}, "paper": {}}
    default_size: ClassVar[str] = "small"
    default_ranks: ClassVar[int] = 1
    default_repeats: ClassVar[int | None] = None   # None: the harness default (5); 1 for training workloads
    default_warmup: ClassVar[int | None] = None    # None: the harness default (1)
    claims: ClassVar[list[Claim]] = []

    def setup(self, ctx: RunContext) -> None:
        """Prepare data and models before timing starts (generation counts as untimed)."""

    def run(self, ctx: RunContext) -> dict[str, Any]:
        """Run one repeat and return its metrics."""
        raise NotImplementedError

    def teardown(self, ctx: RunContext) -> None:
        """Release what setup made."""

    def check_params(self, params: dict[str, Any]) -> None:
        """Reject bad input in the parent, before anything runs: raise ``UsageError`` naming the
        param and the fix (a data file that is missing or malformed, ...). Default: nothing."""

    def skip_reason(self, params: dict[str, Any], ranks: int) -> str | None:
        """Why this case cannot run here (checked in the parent), or None. Default: missing packages."""
        for module in self.requires:
            if importlib.util.find_spec(module) is None:
                return (f"needs the Python package {module!r}, which is not installed here: "
                        f"pip install 'hpml-harness[all]'")
        return None

    def resolve_params(self, size: str, overrides: dict[str, Any]) -> dict[str, Any]:
        """Defaults, then the size's values, then ``overrides``; every value validated."""
        if size not in self.sizes:
            raise UsageError(f"workload {self.name!r} has no size {size!r} "
                             f"(sizes: {', '.join(self.sizes)})")
        resolved = {name: p.default for name, p in self.params.items()}
        for source in (self.sizes[size], overrides):
            for key, value in source.items():
                if key not in self.params:
                    raise did_you_mean(f"param of workload {self.name!r}:", key, self.params)
                resolved[key] = self.params[key].validate(value, key)
        return resolved
