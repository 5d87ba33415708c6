"""Records as Caliper JSON-split profiles, the form LLNL's Hatchet and Thicket read
(``Thicket.from_caliper``; Benchpark's analysis reads Caliper profiles the same way).

One profile per ok record. Its call tree: the case at the root, its phases below it, and the
profiled communication calls (``Allreduce``, ``bcast``, ...) below the ``comm`` phase that timed
them (below the root where the case timed none). Values per node, each per measured repeat:
``time (inc)`` and ``time`` (seconds, the slowest rank, as the record's phases; the root's
inclusive time is the median repeat, its exclusive time what no phase claimed), ``time (mean
rank)``, ``imbalance`` (max over mean - 1), ``calls``, ``bytes`` (communication), and on the root
the record's scalar metrics as ``metric.<name>``. Every other top-level key is metadata, which
Thicket turns into one row per profile of its metadata table: the machine (key and label),
workload, its version and work digest, size, params, ranks, threads, backend and verified library,
harness commit, run and record id, date. The record's id names the file, so exporting the same
records twice writes the same files.
"""
from __future__ import annotations

import json
import pathlib
import re
import statistics
from typing import Any

from harness.judging.verdicts import as_number
from harness.results.record import Record

# "Node order" (Caliper's aggregate.slot): Hatchet's reader orders the tree by it, and Thicket's
# reader asks for that ordering; a node's order is its index, and data row i is node i.
COLUMNS = ["Node order", "path", "time (inc)", "time", "time (mean rank)", "imbalance", "calls", "bytes"]
VALUE_COLUMNS = COLUMNS[2:]


def metadata(record: Record) -> dict[str, Any]:
    """The profile's run metadata: what a user groups and filters profiles by."""
    return {
        "machine_key": record.machine_key, "machine": record.machine, "workload": record.workload.name,
        "version": record.work_version, "work_digest": record.work_digest, "size": record.size,
        "params": json.dumps(record.params, sort_keys=True), "ranks": record.launch.ranks,
        "threads": record.launch.threads, "backend": record.backend.label,
        "library": record.backend.library, "commit": record.commit, "run_id": record.run_id,
        "record_id": record.id, "date": record.created, "repeats": len(record.samples),
    }


def profile(record: Record) -> dict[str, Any]:
    """The JSON-split profile of one ok record (see the module's docs)."""
    nodes: list[dict[str, Any]] = [{"label": record.workload.name, "column": "path"}]
    rows: list[list[Any]] = []
    median = statistics.median(record.samples) if record.samples else None
    phase_total = sum(p.max_s for p in record.phases.values())
    numbers = {f"metric.{k}": as_number(v) for k, v in sorted(record.metrics.items())}
    root_metrics = {k: v for k, v in numbers.items() if v is not None}
    root = [0, 0, median, None if median is None else max(0.0, median - phase_total), None, None, None, None]
    rows.append(root)
    comm_parent = 0
    for name, phase in sorted(record.phases.items()):
        nodes.append({"label": name, "column": "path", "parent": 0})
        if name == "comm":
            comm_parent = len(nodes) - 1
        rows.append([len(nodes) - 1, len(nodes) - 1, phase.max_s, phase.max_s, phase.mean_s, phase.imbalance,
                     phase.count_per_repeat or None, None])
    if record.comm is not None and record.comm.ops:
        repeats = max(1, record.comm.repeats or len(record.samples) or 1)
        below = 0.0
        for op, figures in sorted(record.comm.ops.items()):
            seconds = (as_number(figures.get("seconds_max")) or 0.0) / repeats
            below += seconds
            nodes.append({"label": op, "column": "path", "parent": comm_parent})
            rows.append([len(nodes) - 1, len(nodes) - 1, seconds, seconds, (as_number(figures.get("seconds_mean")) or 0.0) / repeats,
                         as_number(figures.get("imbalance")), (as_number(figures.get("calls")) or 0.0) / repeats,
                         (as_number(figures.get("bytes")) or 0.0) / repeats])
        if comm_parent:   # the comm phase's own time is what its calls did not take
            row = rows[comm_parent]
            row[3] = max(0.0, row[2] - below)
    columns = COLUMNS + list(root_metrics)
    for row in rows:
        row.extend([None] * len(root_metrics))
    rows[0][len(COLUMNS):] = list(root_metrics.values())
    return {"data": rows, "columns": columns,
            "column_metadata": [{"is_value": c not in ("path", "Node order")} for c in columns],
            "nodes": nodes, **metadata(record)}


def file_name(record: Record) -> str:
    """``<workload>-<record id>.json``, safe as a file name whatever the id holds."""
    safe = re.sub(r"[^A-Za-z0-9_.-]", "_", f"{record.workload.name}-{record.id}")[:200]
    return f"{safe}.json"


def export(records: list[Record], out: pathlib.Path) -> list[pathlib.Path]:
    """One profile file per ok record in ``out`` (created), written whole; the paths written."""
    from harness.output.atomic import write_atomic

    out.mkdir(parents=True, exist_ok=True)
    written = []
    for record in records:
        if not record.ok or not record.samples:
            continue
        path = out / file_name(record)
        text = json.dumps(profile(record), allow_nan=False, separators=(",", ":"))
        write_atomic(path, lambda f, text=text: f.write(text.encode()))
        written.append(path)
    return written
