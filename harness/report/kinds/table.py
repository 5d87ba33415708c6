"""What the flat kinds (csv, parquet) share: one row per record with its scalar metrics as
``metric.<name>`` columns, or (``--by-machine``) the wide table of matched cases per machine."""
from __future__ import annotations

import pandas as pd

from harness.errors import UsageError
from harness.report.kinds import ReportOptions
from harness.results.frame import NOT_FLAT


def flat_rows(df: pd.DataFrame) -> pd.DataFrame:
    """One row per record: the flat columns and the scalar metrics (lists such as samples and
    curves stay out of flat formats)."""
    metrics = pd.DataFrame([{f"metric.{k}": v for k, v in m.items() if not isinstance(v, (list, dict))}
                            for m in df.metrics], index=df.index)
    return df.drop(columns=NOT_FLAT).join(metrics)


def by_machine_rows(df: pd.DataFrame, options: ReportOptions) -> pd.DataFrame:
    from harness.report.machines import by_machine

    wide = by_machine(df, options.reference)
    if wide.empty:
        raise UsageError("--by-machine: no ok measurement records to compare")
    return wide


def written(out: object, wide: pd.DataFrame | None, rows: int, size: int) -> str:
    if wide is not None:
        return f"wrote {out} ({len(wide)} matched cases x {len(wide.attrs['machines'])} machines)"
    return f"wrote {out} ({size} bytes, {rows} records)"
