"""Typed workload parameters: defaults, parsing from the command line, validation."""
from __future__ import annotations

import math

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from harness.errors import UsageError

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}


@dataclass(frozen=True)
class Param:
    """One typed parameter of a workload.

    ``type`` is one of ``int``, ``float``, ``str``, ``bool``, or ``list`` with ``item`` one of
    the others: ``Param(list, item=int, default=[1, 2, 4], minimum=1)`` (bounds and choices
    then apply to each item). Bounds and choices are checked for every value, whether it comes
    from a size, a suite or ``--param``. On the command line a list is written with colons
    (``--param nodes=1:2:4``; commas sweep); in a suite, as that string or as ``[[1, 2, 4]]``.
    """

    type: type
    default: Any
    minimum: float | None = None
    maximum: float | None = None
    choices: Sequence[Any] | None = None
    help: str = ""
    extra: dict[str, Any] = field(default_factory=dict)
    item: type | None = None
    # a param added to a workload after records were made, whose default does the work those
    # records did: at its default it is left out of the work digest (harness.work_identity), so
    # adding it (an ablation's switch) keeps the earlier captures comparable
    added_later: bool = False

    def __post_init__(self) -> None:
        if self.type is list:
            if self.item not in (int, float, str, bool):
                raise TypeError("a list Param needs item=int, float, str or bool")
            return
        if self.type not in (int, float, str, bool):
            raise TypeError(f"Param type must be int, float, str, bool or list, not {self.type!r}")

    @property
    def _scalar(self) -> Param:
        """The Param of one item of a list Param."""
        return Param(self.item, None, self.minimum, self.maximum, self.choices)

    def parse(self, text: str, name: str = "param") -> Any:
        """Convert command-line text to this parameter's type, then validate it."""
        if self.type is list:
            items = split_list(text)
            if not items:
                raise UsageError(f"param {name}={text!r}: expected a list of {self.item.__name__} "
                                 "separated by colons, e.g. 1:2:4")
            return [self._scalar.parse(v, name) for v in items]
        text = text.strip()
        try:
            if self.type is bool:
                low = text.lower()
                if low not in _TRUE | _FALSE:
                    raise ValueError(text)
                value: Any = low in _TRUE
            else:
                value = self.type(text)
        except ValueError:
            raise UsageError(
                f"param {name}={text!r}: expected {self.type.__name__}"
                f"{self._range_text()}"
            ) from None
        return self.validate(value, name)

    def validate(self, value: Any, name: str = "param") -> Any:
        """Return ``value`` coerced to the type, or raise :class:`UsageError` naming the fix."""
        if self.type is list:
            if isinstance(value, str):
                return self.parse(value, name)
            if not isinstance(value, (list, tuple)) or not value:
                raise UsageError(f"param {name}={value!r}: expected a non-empty list of {self.item.__name__}")
            return [self._scalar.validate(v, name) for v in value]
        if isinstance(value, str) and self.type is not str:
            return self.parse(value, name)
        if self.type is float and isinstance(value, int) and not isinstance(value, bool):
            value = float(value)
        if not isinstance(value, self.type) or (self.type is int and isinstance(value, bool)):
            raise UsageError(
                f"param {name}={value!r}: expected {self.type.__name__}{self._range_text()}"
            )
        if self.type is float and not math.isfinite(value):
            raise UsageError(f"param {name}={value!r}: expected a finite number{self._range_text()}")
        if self.minimum is not None and value < self.minimum:
            raise UsageError(f"param {name}={value!r} is below the minimum {self.minimum}")
        if self.maximum is not None and value > self.maximum:
            raise UsageError(f"param {name}={value!r} is above the maximum {self.maximum}")
        if self.choices is not None and value not in self.choices:
            raise UsageError(
                f"param {name}={value!r} is not one of {', '.join(map(str, self.choices))}"
            )
        return value

    def _range_text(self) -> str:
        if self.choices is not None:
            return f" (one of {', '.join(map(str, self.choices))})"
        lo = "" if self.minimum is None else f">= {self.minimum}"
        hi = "" if self.maximum is None else f"<= {self.maximum}"
        both = " and ".join(x for x in (lo, hi) if x)
        return f" ({both})" if both else ""

    def describe(self) -> str:
        """One line for ``harness list``: type, default, range."""
        kind = f"list[{self.item.__name__}]" if self.type is list else self.type.__name__
        return f"{kind}={self.default!r}{self._range_text()}"


def parse_int_list(text: str, what: str, minimum: int = 1, maximum: int | None = None) -> list[int]:
    """``"1,2,4"`` or ``"1:2:4"`` -> ``[1, 2, 4]`` for list-valued options and params; bad text
    is a UsageError naming ``what`` (e.g. ``"--ranks"`` or ``"param nodes"``) and the fix.

    On the command line ``--param k=a,b`` sweeps a and b, so a list-valued param is written
    with colons there: ``--param nodes=1:2:4``."""
    try:
        values = [int(v) for v in split_list(text)]
    except ValueError:
        raise UsageError(f"{what} {text!r}: expected integers such as 1,2,4") from None
    if not values or min(values) < minimum or (maximum is not None and max(values) > maximum):
        bound = f"between {minimum} and {maximum}" if maximum is not None else f">= {minimum}"
        raise UsageError(f"{what} {text!r}: values must be {bound}")
    return values


def split_list(text: str) -> list[str]:
    """Items of a list-valued string param, separated by commas, colons or spaces."""
    import re
    return [v for v in re.split(r"[,:\s]+", text) if v]


def added_later_defaults(params: Mapping[str, Param]) -> dict[str, Any]:
    """{name: default} of the params declared ``added_later``: the values a record made before
    they existed ran at (the work digest leaves them out there; current claims read them in)."""
    return {name: p.default for name, p in params.items() if p.added_later}
