"""The Markdown report (how docs/results.md is made): streamed piece by piece as it is made."""
from __future__ import annotations

import pathlib
import sys
from collections.abc import Iterable, Iterator

import pandas as pd

from harness.output.atomic import write_atomic
from harness.report.kinds import ReportOptions
from harness.report.tables import markdown_parts


def write(df: pd.DataFrame, problems: list[str], options: ReportOptions, out: pathlib.Path | None) -> str | None:
    parts = markdown_parts(df, problems)
    if options.stamp:
        parts = stamped(parts, options.stamp)
    if out is None:
        for piece in parts:
            sys.stdout.write(piece)
        return None
    write_atomic(out, lambda f: f.writelines(piece.encode() for piece in parts))
    return f"wrote {out} ({out.stat().st_size} bytes, {len(df)} records)"


def stamped(parts: Iterable[str], stamp: str) -> Iterator[str]:
    """The report's title, then the stamp, then the rest."""
    parts = iter(parts)
    title, _, rest = next(parts).partition("\n\n")
    yield f"{title}\n\n{stamp}{rest}"
    yield from parts
