"""The harness's settings read from environment variables (documented in docs/running.md).

A value that is set but unusable (not a number, not above zero, not finite) falls back to the
default with one warning naming the variable, so a typo is never silently a different setting."""
from __future__ import annotations

import math
import os
import sys

from harness.output.safe_text import visible

_warned: set[str] = set()


def _fallback(name: str, raw: str, want: str, default: float) -> None:
    if name not in _warned:
        _warned.add(name)
        try:
            sys.stderr.write(visible(f"warning: {name}={raw!r} is not {want}; using the default {default:g}\n"))
        except (OSError, ValueError):
            pass


def positive_seconds(name: str, default: float) -> float:
    """``$name`` as a finite number of seconds > 0, or ``default`` when it is unset (or unusable, warned)."""
    raw = os.environ.get(name)
    if raw is None or not raw.strip():
        return default
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value > 0):
        _fallback(name, raw, "a number of seconds above 0", default)
        return default
    return value


def positive_int(name: str, default: int) -> int:
    """``$name`` as a whole number >= 1, or ``default`` when it is unset (or unusable, warned)."""
    raw = os.environ.get(name)
    if raw is None or not raw.strip():
        return default
    try:
        value = int(raw.strip())
    except ValueError:
        value = 0
    if value < 1:
        _fallback(name, raw, "a whole number of 1 or more", default)
        return default
    return value
