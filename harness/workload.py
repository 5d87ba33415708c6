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


@dataclass(frozen=True)
class Claim:
    """A checkable statement from a paper: ``metric comparison threshold``.

    ``paper_value`` is what the paper reports (kept next to the measured value);
    ``source`` says where in the paper it comes from.
    """

    metric: str
    comparison: str
    threshold: float
    paper_value: float | str | None = None
    source: str = ""
    description: str = ""

    def __post_init__(self) -> None:
        if self.comparison not in _COMPARISONS:
            raise ValueError(f"Claim comparison must be one of {', '.join(_COMPARISONS)}")

    def evaluate(self, metrics: dict[str, Any]) -> dict[str, Any]:
        """Return the verdict as a record fragment; a missing metric is 'not evaluated', never a pass."""
        verdict = asdict(self)
        value = metrics.get(self.metric)
        if not isinstance(value, (int, float)) or isinstance(value, bool) or math.isnan(value):
            verdict.update(measured=None, passed=None,
                           reason=f"metric {self.metric!r} was not reported by this case")
            return verdict
        verdict.update(measured=value, passed=bool(_COMPARISONS[self.comparison](value, self.threshold)),
                       reason="")
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
    claims: ClassVar[list[Claim]] = []

    def setup(self, ctx: RunContext) -> None:
        """Prepare data and models before timing starts (generation counts as untimed)."""

    def run(self, ctx: RunContext) -> dict[str, Any]:
        """Run one repeat and return its metrics."""
        raise NotImplementedError

    def teardown(self, ctx: RunContext) -> None:
        """Release what setup made."""

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
