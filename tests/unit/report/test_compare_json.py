"""harness compare --json: strict JSON (issue 55): non-finite figures are null, never NaN/Infinity."""
from __future__ import annotations

import json
import math

import pytest

from harness.report.compare import Comparison, as_json


def test_non_finite_figures_are_null_in_strict_json() -> None:
    rows = [Comparison("case", 0.0, 1.0, math.nan, None, "too few samples", detectable=math.inf),
            Comparison("case2", 1.0, 2.0, 2.0, 0.01, "slower", 1.5, 2.5)]
    out = json.loads(as_json(rows), parse_constant=lambda c: pytest.fail(f"non-standard JSON constant {c}"))
    assert out[0]["ratio"] is None and out[0]["detectable"] is None and out[0]["verdict"] == "too few samples"
    assert out[1]["ratio"] == 2.0
