"""``harness show RESULTS``: a readable table of results files or folders."""
from __future__ import annotations

import argparse
import functools

from rich.table import Table
from rich.text import Text

from harness.commands.common import add_correction_option, console, warn_unreadable
from harness.judging.verdicts import counts_text, summarize_claims
from harness.errors import UsageError
from harness.results.record import Record
from harness.results.scan import scan

RICH_ROWS = 500   # beyond this, rich's table layout (about 4 ms a row) gives way to plain columns


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("show", help="print a table of results files or folders")
    p.add_argument("results", nargs="+", help="results .jsonl files or folders holding them")
    p.add_argument("--metrics", action="store_true", help="add a column with each case's metrics")
    add_correction_option(p)
    p.set_defaults(func=main)


def _fmt(x: float | None, unit: str = "") -> str:
    return "" if x is None else f"{x:.4g}{unit}"


def _cells(record: Record, source: str, metrics: bool = False) -> tuple[list[str], str, list[dict], bool]:
    """The row's cells, and what the correction over its run needs: the run, its verdicts, and
    whether they count (an ok case, not a control's)."""
    return (row(record, metrics), record.run_id, [c.to_json() for c in record.claims],
            record.ok and record.control is None)


def corrected_claims(found: list[tuple[list[str], str, list[dict], bool]], method: str) -> list[str]:
    """Each row's verdict counts after ``method`` over the claims of its run (one family per run,
    ok non-control cases only, as the report's); the others' as judged."""
    from harness.judging.claims import ClaimVerdict
    from harness.judging.multiplicity import corrected_by_family

    statuses: list[list[str]] = [[c["status"] for c in claims] for _, _, claims, _ in found]
    if method != "none":
        after = corrected_by_family(((run, (i, j), ClaimVerdict.from_json(c))
                                     for i, (_, run, claims, counted) in enumerate(found) if counted
                                     for j, c in enumerate(claims)), method)
        for (i, j), status in after.items():
            statuses[i][j] = status
    return [counts_text({s: row.count(s) for s in set(row)}) for row in statuses]


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
        summarize_claims(record.claims),   # as judged; main() gives the counts after the correction
        placement_text(record),
        record.reason.splitlines()[0][:100] if record.reason else "",
    ]
    if metrics:
        cells.append(" ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}"
                              for k, v in record.metrics.items() if not isinstance(v, list)))
    return cells


COLUMNS = ["workload", "size", "params", "backend", "ranks x thr", "status", "median", "95% CI",
           "CoV", "throughput", "comm frac", "claims", "compute rate", "reason"]
CLAIMS_AT = COLUMNS.index("claims")
SHORT_NAMES = {"holm": "after Holm", "bh": "after BH"}   # the column's name: the table is narrow


def placement_text(record: Record) -> str:
    """Each counted phase's achieved GFLOP/s with its fractions of the measured GEMM ceiling and of
    the peak (harness.hardware.placement), e.g. "forward_backward 41.2 GF/s fp32 = 0.38 GEMM,
    0.11 peak"; the busiest phase first."""
    counted = sorted(((name, ph) for name, ph in record.phases.items() if ph.gflops is not None),
                     key=lambda item: -item[1].max_s)
    parts = []
    for name, ph in counted:
        fractions = [f"{f:.2g} {what}" for f, what in ((ph.fraction_of_gemm_ceiling, "GEMM"),
                                                       (ph.fraction_of_peak, "peak")) if f is not None]
        parts.append(f"{name} {ph.gflops:.3g} GF/s {ph.dtype or ''}".rstrip()
                     + (" = " + ", ".join(fractions) if fractions else ""))
    return "; ".join(parts)


def main(args: argparse.Namespace) -> int:
    found, problems = scan(args.results, functools.partial(_cells, metrics=args.metrics))
    warn_unreadable(problems)
    if not found:
        raise UsageError(f"no readable records in {', '.join(args.results)}")
    columns = COLUMNS + (["metrics"] if args.metrics else [])
    rows = [cells for cells, _, _, _ in found]
    if args.correction != "none":
        for cells, after in zip(rows, corrected_claims(found, args.correction)):
            judged = cells[CLAIMS_AT]
            cells[CLAIMS_AT] = after if after == judged else f"{after} (as judged: {judged})"
        columns[CLAIMS_AT] = f"claims ({SHORT_NAMES[args.correction]})"
    rate_at = COLUMNS.index("compute rate")
    if not any(cells[rate_at] for cells in rows):   # no record counted its work: no empty column
        del columns[rate_at]
        for cells in rows:
            del cells[rate_at]
    if len(rows) > RICH_ROWS:
        plain_table(f"{len(rows)} record(s)", columns, rows)
        return 0
    t = Table(title=f"{len(rows)} record(s)", title_justify="left")
    for col in columns:
        t.add_column(col, overflow="fold")
    for cells in rows:
        t.add_row(*map(Text, cells))   # record strings are text, never markup
    console.print(t)
    return 0


def plain_table(title: str, columns: list[str], rows: list[list[str]], widest: int = 48) -> None:
    """Aligned plain-text columns (cells cut at ``widest`` characters), written straight to
    stdout: thousands of rows in a second where a rich table takes minutes."""
    import sys

    cells = [[c if len(c) <= widest else c[:widest - 3] + "..." for c in map(_one_line, r)] for r in rows]
    widths = [max([len(col)] + [len(r[i]) for r in cells]) for i, col in enumerate(columns)]
    out = [title, "  ".join(c.ljust(w) for c, w in zip(columns, widths)).rstrip(),
           "  ".join("-" * w for w in widths)]
    out += ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in cells]
    sys.stdout.write("\n".join(out) + "\n")


def _one_line(text: str) -> str:
    return " ".join(text.split()) if ("\n" in text or "\t" in text or "\r" in text) else text
