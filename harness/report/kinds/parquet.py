"""Parquet: one row per record (or per matched case with --by-machine), for pandas and Arrow
users; columns Arrow cannot type are written as text, so the export never fails."""
from __future__ import annotations

import pathlib

import pandas as pd

from harness.errors import UsageError
from harness.output.atomic import write_atomic
from harness.report.kinds import ReportOptions
from harness.report.kinds.table import by_machine_rows, flat_rows, written


def write(df: pd.DataFrame, problems: list[str], options: ReportOptions, out: pathlib.Path | None) -> str | None:
    try:
        import pyarrow  # noqa: F401
    except ImportError:
        raise UsageError("--format parquet needs pyarrow: pip install pyarrow") from None
    if options.by_machine:
        wide = parquet_safe(by_machine_rows(df, options))
        out = out or pathlib.Path("machines.parquet")
        write_atomic(out, lambda f: wide.to_parquet(f, index=False))
        return written(out, wide, 0, 0)
    out = out or pathlib.Path("report.parquet")
    frame = parquet_safe(flat_rows(df))
    write_atomic(out, lambda f: frame.to_parquet(f, index=False))
    return written(out, None, len(df), out.stat().st_size)


def parquet_safe(frame: pd.DataFrame) -> pd.DataFrame:
    """Columns Arrow cannot type (an integer beyond int64 that a workload returned, numbers mixed
    with text) written as text."""
    import pyarrow as pa

    for col in frame.columns:
        try:
            pa.array(frame[col], from_pandas=True)
        except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError, TypeError, ValueError):
            frame[col] = frame[col].map(lambda v: None if v is None else str(v))
    return frame
