"""The harness's settings read from environment variables (documented in docs/running.md)."""
from __future__ import annotations

import os


def positive_seconds(name: str, default: float) -> float:
    """``$name`` as a number of seconds, or ``default`` when it is unset, not a number, or not > 0."""
    try:
        value = float(os.environ.get(name, default))
    except ValueError:
        return default
    return value if value > 0 else default
