"""Records as a pandas DataFrame: one row per case, the columns a comparison needs."""
from __future__ import annotations

import json
import pathlib
import sys
from collections.abc import Iterable
from typing import Any

import pandas as pd

from harness.claims import claim_counts
from harness.results.record import Record
from harness.results.store import iter_records, results_files


# Columns holding lists or dicts, which flat formats (CSV, Parquet) leave out.
NESTED_COLUMNS = ["samples", "metrics", "ceilings", "claims", "phases"]


def row(record: Record, source: str = "") -> dict[str, Any]:
    """One DataFrame row: the columns a comparison needs (claims kept as their JSON dicts)."""
    stats = record.stats
    ci = (stats.ci95 if stats else None) or [None, None]
    comm = record.comm
    throughput, unit = record.throughput()
    counts = claim_counts(record.claims)
    energy = record.resources.get("energy") or {}
    return {
        "file": source,
        "workload": record.workload.name,
        "case_id": record.case_id,
        "size": record.size,
        "params": json.dumps(record.swept or {}, sort_keys=True),
        "machine": record.machine,
        "emulated": record.emulated,
        "backend": record.backend.label,
        "library": record.backend.library or "",
        "verified": record.backend.verified,
        "ranks": record.launch.ranks,
        "threads": record.launch.threads,
        "status": record.status,
        "reason": record.reason,
        "median_s": stats.median if stats else None,
        "ci95_low_s": ci[0],
        "ci95_high_s": ci[1],
        "cov": stats.cov if stats else None,
        "unstable": stats.unstable if stats else None,
        "throughput": throughput,
        "throughput_unit": unit,
        "fraction_of_peak": record.fraction_of_peak(),
        "comm_fraction": comm.fraction_max if comm else None,
        "comm_imbalance": comm.imbalance if comm else None,
        "energy_j": energy.get("median_j"),           # median joules per measured repeat (rank 0's node)
        "energy_method": energy.get("method") or energy.get("reason") or "",
        # pmpi (C hook) or python (wrapper, ~0.5 us more per Allreduce); "" without MPI comm
        "allreduce_profiler": record.protocol.allreduce_profiler,
        "claims_passed": counts["pass"],
        "claims_failed": counts["fail"],
        "claims_inconclusive": counts["inconclusive"],
        "claims_not_evaluated": counts["not_evaluated"],
        "claims_not_applicable": counts["not_applicable"],
        "claims_total": len(record.claims),
        "control": record.control.role if record.control else "",
        "created": record.created,
        "run_id": record.run_id,
        "samples": record.samples,
        "metrics": record.metrics,
        "ceilings": record.workload.ceilings,
        "claims": [shared(c.to_json()) for c in record.claims],
        "phases": {k: v.max_s for k, v in record.phases.items()},
    }


def shared(value: Any) -> Any:
    """``value`` with its strings interned: the claims' texts, sources and descriptions repeat in
    every record of a workload, and 100,000 rows would otherwise hold 100,000 copies of each."""
    if isinstance(value, str):
        return sys.intern(value)
    if isinstance(value, dict):
        return {sys.intern(k): shared(v) for k, v in value.items()}
    if isinstance(value, list):
        return [shared(v) for v in value]
    return value


def load_frame(paths: Iterable[str | pathlib.Path]) -> tuple[pd.DataFrame, list[str]]:
    """All readable records of files/folders as one DataFrame, and the problems of bad lines.
    Records are read one at a time and only their row is kept."""
    rows: list[dict[str, Any]] = []
    problems: list[str] = []
    for f in results_files(paths):
        rows.extend(row(r, str(f)) for r in iter_records(f, problems))
    return pd.DataFrame(rows), problems


def load(paths: Iterable[str | pathlib.Path] | str | pathlib.Path) -> pd.DataFrame:
    """The Python API: ``harness.results.load(["a.jsonl", "results/"]) -> DataFrame`` (bad lines are skipped)."""
    if isinstance(paths, (str, pathlib.Path)):
        paths = [paths]
    return load_frame(paths)[0]
