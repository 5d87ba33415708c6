"""Energy per unit of a workload's work, as the report's tables and side-by-side view print it."""
from __future__ import annotations

import math
from typing import Any


def _positive(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) and x > 0


def singular(noun: str) -> str:
    """'boxes' -> 'box', 'samples' -> 'sample', 'images' -> 'image': the unit of one item of work."""
    if len(noun) <= 2:
        return noun
    if noun.endswith(("xes", "ches", "shes", "sses")):
        return noun[:-2]
    return noun[:-1] if noun.endswith("s") and not noun.endswith("ss") else noun


def joules_per_item(joules: Any, seconds: Any, throughput: Any, unit: str | None) -> str:
    """'0.051 J/image': the median repeat's joules over its work (power / rate, where the workload
    declares a throughput in items/s); '' where energy was not measured or there is no rate."""
    if not (_positive(joules) and _positive(seconds) and _positive(throughput) and "/" in (unit or "")):
        return ""
    return f"{joules / seconds / throughput:.3g} J/{singular(unit.split('/')[0])}"


def energy_text(joules: Any, seconds: Any, throughput: Any, unit: str | None) -> str:
    """'12.3 J (0.051 J/image)': median joules per repeat, and per unit of work; '' where energy
    was not measured."""
    if not _positive(joules):
        return ""
    per_item = joules_per_item(joules, seconds, throughput, unit)
    return f"{joules:.4g} J" + (f" ({per_item})" if per_item else "")
