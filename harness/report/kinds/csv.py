"""CSV: one row per record (or per matched case with --by-machine), every cell made safe for a
spreadsheet (``safe_text.csv_cell``); streamed to stdout or written whole to --out."""
from __future__ import annotations

import pathlib
import sys

import pandas as pd

from harness.output.atomic import write_atomic
from harness.output.safe_text import csv_frame
from harness.report.kinds import ReportOptions
from harness.report.kinds.table import by_machine_rows, flat_rows, written


def write(df: pd.DataFrame, problems: list[str], options: ReportOptions, out: pathlib.Path | None) -> str | None:
    if options.by_machine:
        wide = by_machine_rows(df, options)
        out = out or pathlib.Path("machines.csv")
        write_atomic(out, lambda f: csv_frame(wide).to_csv(f, index=False, encoding="utf-8"))
        return written(out, wide, 0, 0)
    frame = csv_frame(flat_rows(df))   # 100,000 rows of CSV never sit in memory twice
    del df
    if out is None:
        frame.to_csv(sys.stdout, index=False)
        return None
    write_atomic(out, lambda f: frame.to_csv(f, index=False, encoding="utf-8"))
    return written(out, None, len(frame), out.stat().st_size)
