"""How a verdict reads in a table: its measured figure with the interval, where the interval came
from, and the verdict in words. No pandas here: JUnit, the closing table of a run and
``harness controls`` write verdicts without loading it (every command's start-up pays for what
the command line imports)."""
from __future__ import annotations

from typing import Any

from harness.judging.claims import ClaimVerdict
from harness.judging.intervals import level_text
from harness.judging.multiplicity import NOT_CORRECTED


def num_text(x: Any, fmt: str = "{:.4g}") -> str:
    """A number as a table shows it; '' for None, NaN and pandas' missing values."""
    if x is None:
        return ""
    try:
        if x != x:          # NaN, NaT
            return ""
    except TypeError:       # pandas' NA has no truth value
        return ""
    return fmt.format(x)


def measured_text(c: ClaimVerdict) -> str:
    """The measured figure with its interval: ``0.0044 [-0.008, 0.017]`` (an unbounded side
    reads -inf or inf; a verdict of an older record says it had no interval)."""
    text = num_text(c.measured)
    if c.interval is not None and text:
        lo, hi = c.interval
        text += f" [{'-inf' if lo is None else num_text(lo)}, {'inf' if hi is None else num_text(hi)}]"
    return text


def interval_source(c: ClaimVerdict) -> str:
    """Where the interval came from, in a few words: '95% paired t-interval over 5 shared seeds'."""
    if not c.interval_method:
        return ""
    level = f"{level_text(c.confidence)} " if c.confidence else ""
    return level + c.interval_method


def verdict_text(c: ClaimVerdict) -> str:
    """pass / FAIL / inconclusive / not evaluated: why, and a note when the plugin declared no control."""
    text = VERDICT_TEXT[c.status]
    if c.status in ("not_evaluated", "premise_absent") and c.reason:
        text += f": {c.reason.removeprefix(text + ': ')}"
    if not c.has_control:
        text += " (no control declared)"
    return text


VERDICT_TEXT = {"pass": "pass", "fail": "FAIL", "inconclusive": "inconclusive", "not_evaluated": "not evaluated",
                "not_applicable": "not applicable", "premise_absent": "premise absent", NOT_CORRECTED: NOT_CORRECTED}
