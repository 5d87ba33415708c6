"""``harness report RESULTS...``: one comparable report from results of any machines and backends."""
from __future__ import annotations

import argparse
import pathlib
import sys

from harness.commands.common import add_confidence_option, add_correction_option, current_claims, warn_unreadable
from harness.errors import UsageError
from harness.report.kinds import BY_MACHINE_READS, KINDS, ReportOptions

FORMATS = tuple(KINDS)


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("report", help=f"merge results files into one report ({', '.join(FORMATS)})",
                       description="Merge any number of results files or folders into one report: the "
                                   "machines the records come from and how they compare (when there are "
                                   "several), the paper-claim reproduction summary, the machines' side-by-side "
                                   "tables, then a table per workload and plots (html). Kinds: "
                                   + "; ".join(f"{k.name}: {k.help}" for k in KINDS.values()) + ".")
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
    p.add_argument("--models", metavar="PARAM,PARAM",
                   help="html: also every sweep over these parameters (ranks, threads, a numeric param) with "
                        "Extra-P's fitted curve beside its points (needs Extra-P's extrap command: --extrap, "
                        "$HARNESS_EXTRAP or PATH; docs/analysis.md)")
    p.add_argument("--extrap", metavar="PATH", help="with --models: the extrap command")
    add_correction_option(p)
    add_confidence_option(p, default=None,
                          extra=" (default: the level each record was judged at); claims are judged again "
                                "from the replicates their verdicts keep")
    p.set_defaults(func=main)


def main(args: argparse.Namespace) -> int:
    from harness.report.stamp import stamp_text     # pandas and the report: only when used
    from harness.report.tables import rejudged
    from harness.results.frame import load_frame

    fmt = args.format or (pathlib.Path(args.out).suffix.lstrip(".") if args.out else "md")
    if fmt not in KINDS:
        raise UsageError(f"--out {args.out}: cannot tell the format from {fmt!r}; use --format {'|'.join(FORMATS)}")
    kind = KINDS[fmt]
    if args.by_machine and fmt not in ("csv", "parquet"):
        raise UsageError(f"--by-machine writes a table: give --out FILE.csv or FILE.parquet (not {fmt})")
    models = [m.strip() for m in args.models.split(",") if m.strip()] if args.models else None
    extrap = None
    if models:
        if fmt != "html":
            raise UsageError(f"--models draws figures: give --out FILE.html (not {fmt})")
        from harness.export.extrap import find_extrap
        extrap = find_extrap(args.extrap)
    reads = BY_MACHINE_READS if args.by_machine else kind.reads
    # the replicates behind each verdict: the current claims judge them again (harness.judging.current_claims)
    again = kind.judged_again or args.confidence is not None
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
    options = ReportOptions(stamp=stamp_text(args.results, sys.argv[1:]) if args.stamp and fmt == "md" else None,
                            by_machine=args.by_machine, reference=args.reference,
                            extra={"models": models, "extrap": extrap})
    said = kind.writer().write(df, problems, options, out)
    if said:
        print(said)
    return 0
