"""The HTML report: one self-contained page (harness/report/html.py builds it), written whole."""
from __future__ import annotations

import pathlib

import pandas as pd

from harness.output.atomic import write_atomic
from harness.report.html import html_parts
from harness.report.kinds import ReportOptions


def write(df: pd.DataFrame, problems: list[str], options: ReportOptions, out: pathlib.Path | None) -> str | None:
    out = out or pathlib.Path("report.html")
    parts = html_parts(df, problems, models=options.extra.get("models"), extrap=options.extra.get("extrap"))
    write_atomic(out, lambda f: f.writelines(piece.encode() for piece in parts))
    return f"wrote {out} ({out.stat().st_size} bytes, {len(df)} records)"
