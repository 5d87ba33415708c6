"""``harness report RESULTS...``: one comparable report from results of any machines and backends."""
from __future__ import annotations

import argparse
import os
import pathlib
import sys
import tempfile

from harness.commands.common import add_confidence_option, warn_unreadable
from harness.errors import UsageError
from harness.report.html import html_report
from harness.report.tables import markdown_report, rejudged
from harness.results.frame import NESTED_COLUMNS, load_frame

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
    add_confidence_option(p, default=None,
                          extra=" (default: the level each record was judged at); claims are judged again "
                                "from the replicates their verdicts keep")
    p.set_defaults(func=main)


def _write_atomic(path: pathlib.Path, data: bytes) -> None:
    """Write next to the target, then rename: a failed report never leaves a half file."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def main(args: argparse.Namespace) -> int:
    fmt = args.format or (pathlib.Path(args.out).suffix.lstrip(".") if args.out else "md")
    if fmt not in FORMATS:
        raise UsageError(f"--out {args.out}: cannot tell the format from {fmt!r}; use --format {'|'.join(FORMATS)}")
    df, problems = load_frame(args.results)
    warn_unreadable(problems)
    if df.empty:
        raise UsageError(f"no readable records in {', '.join(args.results)}")
    df = rejudged(df, args.confidence)
    out = pathlib.Path(args.out) if args.out else None
    if out is not None and not out.parent.is_dir():
        raise UsageError(f"--out {out}: folder {out.parent} does not exist")
    if fmt == "md":
        data = markdown_report(df, problems).encode()
    elif fmt == "html":
        data = html_report(df, problems).encode()
        out = out or pathlib.Path("report.html")
    elif fmt == "csv":
        flat = df.drop(columns=NESTED_COLUMNS)
        metrics = pd_json_columns(df)
        data = defuse_formulas(flat.join(metrics)).to_csv(index=False).encode()
    else:
        try:
            import pyarrow  # noqa: F401
        except ImportError:
            raise UsageError("--format parquet needs pyarrow: pip install pyarrow") from None
        out = out or pathlib.Path("report.parquet")
        frame = df.drop(columns=NESTED_COLUMNS).join(pd_json_columns(df))
        with tempfile.TemporaryDirectory() as tmp:
            frame.to_parquet(pathlib.Path(tmp) / "r.parquet", index=False)
            data = (pathlib.Path(tmp) / "r.parquet").read_bytes()
    if out is None:
        sys.stdout.write(data.decode())
    else:
        _write_atomic(out, data)
        print(f"wrote {out} ({len(data)} bytes, {len(df)} records)")
    return 0


FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def defuse_formulas(frame):
    """Text cells that a spreadsheet would run as a formula get a leading apostrophe (OWASP's
    advice for CSV injection); numbers are left alone."""
    def defuse(v):
        return "'" + v if isinstance(v, str) and v.startswith(FORMULA_STARTS) else v
    return frame.map(defuse) if hasattr(frame, "map") else frame.applymap(defuse)


def pd_json_columns(df):
    """Scalar metrics as metric.<name> columns; lists (samples, curves) stay out of flat formats."""
    import pandas as pd

    flat = [{f"metric.{k}": v for k, v in m.items() if not isinstance(v, (list, dict))} for m in df.metrics]
    return pd.DataFrame(flat, index=df.index)
