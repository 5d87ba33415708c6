"""``harness show RESULTS``: a readable table of results files or folders."""
from __future__ import annotations

import argparse

from rich.table import Table
from rich.text import Text

from harness.commands.common import console, warn_unreadable
from harness.claims import summarize_claims
from harness.errors import UsageError
from harness.results.record import Record
from harness.results.store import load_records


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("show", help="print a table of results files or folders")
    p.add_argument("results", nargs="+", help="results .jsonl files or folders holding them")
    p.add_argument("--metrics", action="store_true", help="add a column with each case's metrics")
    p.set_defaults(func=main)


def _fmt(x: float | None, unit: str = "") -> str:
    return "" if x is None else f"{x:.4g}{unit}"


def row(record: Record, metrics: bool = False) -> list[str]:
    """The table cells of one record (also used by tests to check the table)."""
    stats = record.stats
    value, unit = record.throughput()
    cells = [
        record.workload.name, record.size,
        ",".join(f"{k}={v}" for k, v in (record.swept or {}).items()),
        record.backend.label,
        f"{record.launch.ranks}x{record.launch.threads}",
        record.status + (f" ({record.control.role} of a control)" if record.control else ""),
        _fmt(stats.median if stats else None, " s"),
        f"[{stats.ci95[0]:.4g}, {stats.ci95[1]:.4g}]" if stats and stats.ci95 else "",
        _fmt(stats.cov if stats else None) + (" !" if stats and stats.unstable else ""),
        _fmt(value, f" {unit}"),
        _fmt(record.comm.fraction_max if record.comm else None),
        summarize_claims(record.claims),
        record.reason.splitlines()[0][:100] if record.reason else "",
    ]
    if metrics:
        cells.append(" ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}"
                              for k, v in record.metrics.items() if not isinstance(v, list)))
    return cells


COLUMNS = ["workload", "size", "params", "backend", "ranks x thr", "status", "median", "95% CI",
           "CoV", "throughput", "comm frac", "claims", "reason"]


def main(args: argparse.Namespace) -> int:
    records, problems = load_records(args.results)
    warn_unreadable(problems)
    if not records:
        raise UsageError(f"no readable records in {', '.join(args.results)}")
    t = Table(title=f"{len(records)} record(s)", title_justify="left")
    for col in COLUMNS + (["metrics"] if args.metrics else []):
        t.add_column(col, overflow="fold")
    for r in records:
        t.add_row(*map(Text, row(r, args.metrics)))   # record strings are text, never markup
    console.print(t)
    return 0
