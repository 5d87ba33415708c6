"""JSON Lines: one JSON object per record (its flat columns and scalar metrics), for tools that
read a stream of records (jq, DuckDB, Spark); non-finite figures are written as null."""
from __future__ import annotations

import json
import math
import pathlib
import sys

import pandas as pd

from harness.output.atomic import write_atomic
from harness.report.kinds import ReportOptions
from harness.report.kinds.table import flat_rows


def write(df: pd.DataFrame, problems: list[str], options: ReportOptions, out: pathlib.Path | None) -> str | None:
    rows = flat_rows(df)
    lines = (json.dumps({k: _plain(v) for k, v in row.items()}, allow_nan=False, default=str) + "\n"
             for row in rows.to_dict(orient="records"))
    if out is None:
        sys.stdout.writelines(lines)
        return None
    write_atomic(out, lambda f: f.writelines(line.encode() for line in lines))
    return f"wrote {out} ({out.stat().st_size} bytes, {len(rows)} records)"


def _plain(value: object) -> object:
    """A cell as JSON has it: NaN, Infinity and pandas' missing values as null, numpy scalars as numbers."""
    if value is None or value is pd.NA or value is pd.NaT:
        return None
    if hasattr(value, "item"):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value
