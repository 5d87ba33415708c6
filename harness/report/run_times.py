"""The report's "Runs and their time" table: how long each run took on its machine, from its records.

A person about to type `harness run --suite all` asks how long it will take on a machine like theirs;
the README points here instead of quoting one number (issue 57): per machine and run, the wall time
from the first case's start to the last case's end, the cases' own time, the share of it spent in
timed repeats (the rest is start-up, imports, data, tracing, verification) and the slowest case.
"""
from __future__ import annotations

from datetime import datetime

import pandas as pd

from harness.output.safe_text import one_line

COLUMNS = ["machine", "run", "cases", "wall (min)", "cases' time (min)", "in timed repeats", "slowest case (s)"]
NOTE = ("Per run: wall time from the first case's start to the last case's end (cases run one after another, so "
        "this is what `harness run` took, less its start and its closing table); the sum of the cases' times; the "
        "share of that in timed repeats (the rest is process start-up, imports, data generation, tracing and "
        "verification); the slowest case and its seconds (suite all's budget is 4 minutes a case). The README's "
        "time of the main job is this table's, per machine.")


def _start(text: str) -> float | None:
    try:
        return datetime.fromisoformat(text).timestamp()
    except (TypeError, ValueError):
        return None


def run_rows(df: pd.DataFrame, min_cases: int = 2) -> tuple[list[str], list[list[str]]]:
    """One row per (machine, run) of at least ``min_cases`` cases, longest run first per machine."""
    if df.empty or "duration_s" not in df:
        return COLUMNS, []
    rows = []
    for (machine, run_id), group in df.groupby(["machine", "run_id"], sort=True):
        runs = [(s, d) for s, d in zip(map(_start, group["created"]), group["duration_s"]) if s is not None and d == d]
        if len(group) < min_cases or not runs:
            continue
        wall = max(s + d for s, d in runs) - min(s for s, _ in runs)
        total = float(group["duration_s"].sum())
        timed = float(group["timed_s"].sum())
        slowest = group.loc[group["duration_s"].idxmax()]
        rows.append((one_line(machine), -wall, [
            one_line(machine), str(run_id), str(len(group)), f"{wall / 60:.1f}", f"{total / 60:.1f}",
            f"{100 * timed / total:.0f}%" if total > 0 else "",
            f"{slowest['workload']} {slowest['size']} {slowest['ranks']}x{slowest['threads']}: {slowest['duration_s']:.0f}"]))
    return COLUMNS, [row for _, _, row in sorted(rows, key=lambda item: (item[0], item[1]))]
