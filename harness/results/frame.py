"""Records as a pandas DataFrame: one row per case, the columns a comparison needs."""
from __future__ import annotations

import json
import pathlib
from collections.abc import Iterable
from typing import Any

import pandas as pd

from harness.results.store import read_records, results_files


def machine_label(record: dict[str, Any]) -> str:
    """The profile name when matched, else the CPU model and host (never a made-up node name)."""
    profile = record.get("profile", {}).get("name")
    if profile:
        return profile
    hw = record.get("hardware", {})
    return f"{hw.get('cpu', {}).get('model', '?')} @ {hw.get('hostname', '?')}"


def _throughput(metrics: dict[str, Any]) -> tuple[float | None, str]:
    for key, unit in (("samples_per_s", "samples/s"), ("boxes_per_s", "boxes/s"),
                      ("images_per_s", "images/s"), ("peak_gflops_fp64", "GFLOP/s")):
        value = metrics.get(key)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value), unit
    return None, ""


def row(record: dict[str, Any], source: str = "") -> dict[str, Any]:
    stats = record.get("stats") or {}
    ci = stats.get("ci95") or [None, None]
    comm = (record.get("comm") or {}).get("total", {})
    metrics = record.get("metrics") or {}
    throughput, unit = _throughput(metrics)
    claims = record.get("claims") or []
    return {
        "file": source,
        "workload": record["workload"]["name"],
        "case_id": record["case_id"],
        "size": record["size"],
        "params": json.dumps(record.get("swept") or {}, sort_keys=True),
        "machine": machine_label(record),
        "backend": record["backend"]["requested"] or "default",
        "library": record["backend"].get("library") or "",
        "verified": record["backend"].get("verified"),
        "ranks": record["launch"]["ranks"],
        "threads": record["launch"]["threads"],
        "status": record["status"],
        "reason": record["reason"],
        "median_s": stats.get("median"),
        "ci95_low_s": ci[0],
        "ci95_high_s": ci[1],
        "cov": stats.get("cov"),
        "unstable": stats.get("unstable"),
        "throughput": throughput,
        "throughput_unit": unit,
        "fraction_of_peak": metrics.get("fraction_of_peak_fp64"),
        "comm_fraction": comm.get("fraction_max"),
        "comm_imbalance": comm.get("imbalance"),
        # pmpi (C hook) or python (wrapper, ~0.5 us more per Allreduce); "" without MPI comm
        "allreduce_profiler": (record.get("protocol") or {}).get("allreduce_profiler", ""),
        "claims_passed": sum(1 for c in claims if c.get("passed") is True),
        "claims_failed": sum(1 for c in claims if c.get("passed") is False),
        "claims_total": len(claims),
        "created": record["created"],
        "run_id": record["run_id"],
        "samples": record.get("samples") or [],
        "metrics": metrics,
        "claims": claims,
        "phases": {k: v["max_s"] for k, v in (record.get("phases") or {}).items()},
    }


def load_frame(paths: Iterable[str | pathlib.Path]) -> tuple[pd.DataFrame, list[str]]:
    """All readable records of files/folders as one DataFrame, and the problems of bad lines."""
    rows, problems = [], []
    for f in results_files(paths):
        records, bad = read_records(f)
        problems.extend(bad)
        rows.extend(row(r, str(f)) for r in records)
    return pd.DataFrame(rows), problems


def load(paths: Iterable[str | pathlib.Path] | str | pathlib.Path) -> pd.DataFrame:
    """The Python API: ``harness.results.load(["a.jsonl", "results/"]) -> DataFrame`` (bad lines are skipped)."""
    if isinstance(paths, (str, pathlib.Path)):
        paths = [paths]
    return load_frame(paths)[0]
