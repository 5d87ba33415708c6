"""The report's "compute phases on their machine" table: each workload's counted phases
(``Workload.work_counts``) with the GFLOP/s they achieved and their fractions of the machine's
measured GEMM ceiling and peak, as the records hold them (harness.hardware.placement). Its
figures are drawn by harness.report.plots.placement_figures."""
from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pandas as pd

from harness.output.safe_text import one_line

COLUMNS = ["machine", "workload", "case", "phase", "precision", "GFLOP/s", "of GEMM ceiling", "of peak", "flop/byte",
           "counted by"]
NOTE = ("Each workload's compute phases where it counts its floating-point operations: the work per repeat (summed "
        "over ranks) over the slowest rank's seconds in the phase, against this machine's best GEMM rate measured by "
        "the roofline in the same run (scaled to the cores the case used) and its peak for those cores. A fraction "
        "well below 1 says the workload does not use the node's arithmetic (small kernels, framework overhead, "
        "memory); above 1, its library's GEMM beat the one the ceiling was measured with. Blank: no ceiling or "
        "peak (see the record's placement_note).")


def placed(df: pd.DataFrame) -> Iterator[tuple[Any, dict[str, Any]]]:
    """(row, phase) for every counted phase of the frame's ok records."""
    if df.empty or "placement" not in df:
        return
    for r in df.itertuples():
        if r.status != "ok" or not isinstance(r.placement, str):
            continue
        for phase in json.loads(r.placement):
            yield r, phase


def _fmt(x: float | None, digits: int = 3) -> str:
    return "" if x is None else f"{x:.{digits}g}"


def placement_rows(df: pd.DataFrame) -> tuple[list[str], list[list[str]]]:
    """One row per counted phase, machine by machine, the busiest rate first within a case."""
    rows = []
    for r, ph in placed(df):
        swept = json.loads(r.params) if isinstance(r.params, str) and r.params else {}
        params = ",".join(f"{k}={v}" for k, v in swept.items())
        rows.append([one_line(r.machine), r.workload, " ".join(filter(None, (r.size, params, f"{r.ranks}x{r.threads}"))), ph["phase"],
                     ph.get("dtype") or "", _fmt(ph.get("gflops")), _fmt(ph.get("fraction_of_gemm_ceiling"), 2),
                     _fmt(ph.get("fraction_of_peak"), 2), _fmt(ph.get("flop_per_byte")), ph.get("counted_by") or ""])
    rows.sort(key=lambda row: (row[0], row[1], row[2], row[3]))
    return COLUMNS, rows
