"""``harness show RESULTS``: a readable table of results files or folders."""
from __future__ import annotations

import argparse
from typing import Any

from rich.table import Table

from harness.commands.common import console, err_console
from harness.errors import UsageError
from harness.results.store import load_records


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("show", help="print a table of results files or folders")
    p.add_argument("results", nargs="+", help="results .jsonl files or folders holding them")
    p.add_argument("--metrics", action="store_true", help="add a column with each case's metrics")
    p.set_defaults(func=main)


def _fmt(x: float | None, unit: str = "") -> str:
    return "" if x is None else f"{x:.4g}{unit}"


def row(record: dict[str, Any], metrics: bool = False) -> list[str]:
    """The table cells of one record (also used by tests to check the table)."""
    stats = record.get("stats") or {}
    ci = stats.get("ci95")
    comm = record.get("comm") or {}
    claims = record.get("claims") or []
    passed = sum(1 for c in claims if c["passed"])
    cells = [
        record["workload"]["name"], record["size"],
        ",".join(f"{k}={v}" for k, v in (record.get("swept") or {}).items()),
        record["backend"]["requested"] or "default",
        f"{record['launch']['ranks']}x{record['launch']['threads']}",
        record["status"],
        _fmt(stats.get("median"), " s"),
        f"[{ci[0]:.4g}, {ci[1]:.4g}]" if ci else "",
        _fmt(stats.get("cov")) + (" !" if stats.get("unstable") else ""),
        _fmt(comm.get("total", {}).get("fraction_max")),
        f"{passed}/{len(claims)}" if claims else "",
        (record["reason"] or "").splitlines()[0][:100] if record["reason"] else "",
    ]
    if metrics:
        cells.append(" ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}"
                              for k, v in record["metrics"].items() if not isinstance(v, list)))
    return cells


COLUMNS = ["workload", "size", "params", "backend", "ranks x thr", "status", "median", "95% CI",
           "CoV", "comm frac", "claims", "reason"]


def main(args: argparse.Namespace) -> int:
    records, problems = load_records(args.results)
    for p in problems:
        err_console.print(f"[yellow]warning:[/] {p}", markup=False)
    if not records:
        raise UsageError(f"no readable records in {', '.join(args.results)}")
    t = Table(title=f"{len(records)} record(s)", title_justify="left")
    for col in COLUMNS + (["metrics"] if args.metrics else []):
        t.add_column(col, overflow="fold")
    for r in records:
        t.add_row(*row(r, args.metrics))
    console.print(t)
    return 0
