"""``harness report RESULTS...``: one comparable report from results of any machines and backends."""
from __future__ import annotations

import argparse
import pathlib
import sys

from harness.commands.common import add_confidence_option, add_correction_option, current_claims, warn_unreadable
from harness.atomic import write_atomic
from harness.errors import UsageError
from harness.safe_text import csv_frame

FORMATS = ("md", "html", "csv", "parquet")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("report", help="merge results files into one report (md, html, csv, parquet)",
                       description="Merge any number of results files or folders into one report: the "
                                   "paper-claim reproduction summary first, then a table per workload and "
                                   "plots (html).")
    p.add_argument("results", nargs="+", help="results .jsonl files or folders")
    p.add_argument("--format", choices=FORMATS, default=None,
                   help="default: from --out's suffix, else md")
    p.add_argument("--out", help="output file (default: stdout for md/csv; report.html / report.parquet)")
    p.add_argument("--stamp", action="store_true",
                   help="md: open with the command, the harness commit, machines and dates of the records "
                        "(how docs/results.md is made)")
    p.add_argument("--by-machine", action="store_true",
                   help="csv/parquet: the wide table, one row per matched case and per machine its median "
                        "seconds, interval, throughput, speed-up over the reference with its bootstrap "
                        "interval and fraction of peak")
    p.add_argument("--reference", metavar="TEXT",
                   help="the reference machine of speed-ups: the first whose name contains TEXT "
                        "(default: the machine sharing the most matched cases with the others)")
    p.add_argument("--platforms", metavar="TEXT,TEXT",
                   help="the machines performance portability is computed over, each named by a part of its name "
                        "(default: per workload, the largest set of machines that ran the same work)")
    add_correction_option(p)
    add_confidence_option(p, default=None,
                          extra=" (default: the level each record was judged at); claims are judged again "
                                "from the replicates their verdicts keep")
    p.set_defaults(func=main)


# What each format reads of a record beside its flat columns (the rest is never held in memory).
READS = {"md": frozenset({"claims", "samples", "work_metrics"}),
         "html": frozenset({"claims", "phases", "ceiling_metrics", "ceilings", "samples", "work_metrics"}),
         "csv": frozenset({"metrics"}), "parquet": frozenset({"metrics"})}
BY_MACHINE_READS = frozenset({"samples"})


def main(args: argparse.Namespace) -> int:
    from harness.report.html import html_parts          # pandas and the report: only when used
    from harness.report.stamp import stamp_text
    from harness.report.tables import markdown_parts, rejudged
    from harness.results.frame import NOT_FLAT, load_frame

    fmt = args.format or (pathlib.Path(args.out).suffix.lstrip(".") if args.out else "md")
    if fmt not in FORMATS:
        raise UsageError(f"--out {args.out}: cannot tell the format from {fmt!r}; use --format {'|'.join(FORMATS)}")
    if args.by_machine and fmt not in ("csv", "parquet"):
        raise UsageError(f"--by-machine writes a table: give --out FILE.csv or FILE.parquet (not {fmt})")
    reads = BY_MACHINE_READS if args.by_machine else READS[fmt]
    # the replicates behind each verdict: the current claims judge them again (harness.current_claims)
    again = fmt in ("md", "html") or args.confidence is not None
    df, problems = load_frame(args.results, reads | ({"evidence"} if again else set()),
                              claims_now=current_claims() if "claims" in reads else None)
    warn_unreadable(problems)
    if df.empty:
        raise UsageError(f"no readable records in {', '.join(args.results)}")
    df = rejudged(df, args.confidence)
    df.attrs["reference"] = args.reference
    df.attrs["platforms"] = [p.strip() for p in args.platforms.split(",") if p.strip()] if args.platforms else None
    df.attrs["correction"] = args.correction
    df.attrs["inputs"] = list(args.results)   # machines appear in the order their files were given
    out = pathlib.Path(args.out) if args.out else None
    if out is not None and not out.parent.is_dir():
        raise UsageError(f"--out {out}: folder {out.parent} does not exist")
    if fmt in ("md", "html"):   # written piece by piece as they are made
        parts = (markdown_parts if fmt == "md" else html_parts)(df, problems)
        if args.stamp and fmt == "md":
            parts = _stamped(parts, stamp_text(args.results, sys.argv[1:]))
        if out is None and fmt == "md":
            for piece in parts:
                sys.stdout.write(piece)
            return 0
        out = out or pathlib.Path("report.html")
        write_atomic(out, lambda f: f.writelines(piece.encode() for piece in parts))
        print(f"wrote {out} ({out.stat().st_size} bytes, {len(df)} records)")
        return 0
    if args.by_machine:
        from harness.report.machines import by_machine

        wide = by_machine(df, args.reference)
        if wide.empty:
            raise UsageError("--by-machine: no ok measurement records to compare")
        out = out or pathlib.Path(f"machines.{fmt}")
        if fmt == "csv":
            write_atomic(out, lambda f: csv_frame(wide).to_csv(f, index=False, encoding="utf-8"))
        else:
            write_atomic(out, lambda f: parquet_safe(wide).to_parquet(f, index=False))
        print(f"wrote {out} ({len(wide)} matched cases x {len(wide.attrs['machines'])} machines)")
        return 0
    if fmt == "csv":   # written as it is made: 100,000 rows of CSV never sit in memory twice
        frame = csv_frame(df.drop(columns=NOT_FLAT).join(pd_json_columns(df)))
        del df
        if out is None:
            frame.to_csv(sys.stdout, index=False)
            return 0
        write_atomic(out, lambda f: frame.to_csv(f, index=False, encoding="utf-8"))
        print(f"wrote {out} ({out.stat().st_size} bytes, {len(frame)} records)")
        return 0
    try:   # parquet
        import pyarrow  # noqa: F401
    except ImportError:
        raise UsageError("--format parquet needs pyarrow: pip install pyarrow") from None
    out = out or pathlib.Path("report.parquet")
    frame = parquet_safe(df.drop(columns=NOT_FLAT).join(pd_json_columns(df)))
    write_atomic(out, lambda f: frame.to_parquet(f, index=False))
    print(f"wrote {out} ({out.stat().st_size} bytes, {len(df)} records)")
    return 0


def _stamped(parts, stamp: str):
    """The report's title, then the stamp, then the rest."""
    parts = iter(parts)
    title, _, rest = next(parts).partition("\n\n")
    yield f"{title}\n\n{stamp}{rest}"
    yield from parts


def pd_json_columns(df):
    """Scalar metrics as metric.<name> columns; lists (samples, curves) stay out of flat formats."""
    import pandas as pd

    flat = [{f"metric.{k}": v for k, v in m.items() if not isinstance(v, (list, dict))} for m in df.metrics]
    return pd.DataFrame(flat, index=df.index)


def parquet_safe(frame):
    """Columns Arrow cannot type (an integer beyond int64 that a workload returned, numbers mixed
    with text) written as text, so the export never fails on what the harness recorded."""
    import pyarrow as pa

    for col in frame.columns:
        try:
            pa.array(frame[col], from_pandas=True)
        except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError, TypeError, ValueError):
            frame[col] = frame[col].map(lambda v: None if v is None else str(v))
    return frame
