"""A frame row's claims column as verdicts, as judged and after the report's correction over each
run's claims: for the report's tables and its machine views alike."""
from __future__ import annotations

import json
from typing import Any

import pandas as pd

from harness.judging.claims import ClaimVerdict
from harness.judging.multiplicity import corrected_by_family


def verdicts(claims: str | list[dict[str, Any]] | None) -> list[ClaimVerdict]:
    """The verdicts of a frame row's claims column (JSON text, or the dicts themselves)."""
    if isinstance(claims, str):
        claims = json.loads(claims)
    return [ClaimVerdict.from_json(c) for c in claims or []]


def correcting(df: pd.DataFrame) -> str | None:
    """The correction the report applies over each run's claims (``df.attrs``), None for none."""
    method = df.attrs.get("correction")
    return method if method and method != "none" else None


# the corrected verdicts of the last frames, by their method and content: the headline, the summary
# and the matrix share one computation. Kept here, not in ``df.attrs``: pandas deep-copies attrs
# into every frame an operation returns, which cost half of a report's time.
_CORRECTED: dict[tuple[Any, int], dict[tuple[Any, int], str]] = {}


def corrections(df: pd.DataFrame) -> dict[tuple[Any, int], str]:
    """(row index, claim index) -> the verdict after the report's correction, one family per run
    (harness.judging.multiplicity); {} without a correction."""
    method = correcting(df)
    if method is None:
        return {}
    key = (method, hash((tuple(df.index), tuple(df.status), tuple(df.run_id) if "run_id" in df else (),
                         tuple(df.claims))))
    if key in _CORRECTED:
        return _CORRECTED[key]
    ok = df[(df.status == "ok") & (df.control.fillna("") == "")]
    runs = ok.run_id if "run_id" in ok else [None] * len(ok)
    out = corrected_by_family(((run, (idx, j), c) for run, idx, claims in zip(runs, ok.index, ok.claims)
                               for j, c in enumerate(verdicts(claims))), method)
    if len(_CORRECTED) >= 4:
        _CORRECTED.pop(next(iter(_CORRECTED)))
    _CORRECTED[key] = out
    return out
