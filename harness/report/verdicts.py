"""A frame row's claims column as verdicts: for the report's tables and its machine views alike."""
from __future__ import annotations

import json
from typing import Any

from harness.judging.claims import ClaimVerdict


def verdicts(claims: str | list[dict[str, Any]] | None) -> list[ClaimVerdict]:
    """The verdicts of a frame row's claims column (JSON text, or the dicts themselves)."""
    if isinstance(claims, str):
        claims = json.loads(claims)
    return [ClaimVerdict.from_json(c) for c in claims or []]
