"""JSON that strict parsers accept: no NaN or Infinity (JSON has none). Non-finite numbers are
written as null; a reader tells why from the field beside it (a check's status and reason, a
comparison's verdict)."""
from __future__ import annotations

import json
import math
from typing import Any


def finite(value: Any) -> Any:
    """``value`` with every non-finite float (at any depth) replaced by None."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {str(k): finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite(v) for v in value]
    return value


def dumps(value: Any, **kwargs: Any) -> str:
    """``json.dumps`` of ``value`` made finite, with ``allow_nan`` off (a miss raises, never writes)."""
    return json.dumps(finite(value), allow_nan=False, **kwargs)
