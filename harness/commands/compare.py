"""``harness compare BASELINE CANDIDATE``: per-case ratio of medians with its interval,
Mann-Whitney U corrected over all cases (Benjamini-Hochberg), and what each case could detect."""
from __future__ import annotations

import argparse

from rich.table import Table

from harness.commands.common import console, warn_unreadable
from harness.errors import UsageError


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("compare", help="compare two results sets case by case (exit 1 on a regression)",
                       description="Ratio of medians per matching case with a bootstrap interval, a "
                                   "Mann-Whitney U test on the raw samples, its p-value corrected over all "
                                   "matched cases (Benjamini-Hochberg at the false-discovery rate --alpha), "
                                   "and the smallest slowdown each case's samples could have detected. "
                                   "Exit status 1 when any case is significantly slower after the "
                                   "correction: use it to gate CI.")
    p.add_argument("baseline", help="results file or folder")
    p.add_argument("candidate", help="results file or folder")
    p.add_argument("--threshold", type=float, default=0.05,
                   help="smallest relative change that counts (default 0.05 = 5%%)")
    p.add_argument("--alpha", type=float, default=0.05,
                   help="false-discovery rate over all matched cases, and 1 - the level of the ratio "
                        "intervals (default 0.05)")
    p.add_argument("--json", action="store_true", help="print the comparison as JSON")
    p.set_defaults(func=main)


def main(args: argparse.Namespace) -> int:
    from harness.report.compare import COLUMNS, as_json, as_rows, compare, summary   # pandas: only when used
    from harness.results.frame import load_frame

    if not 0 < args.alpha < 1 or args.threshold < 0:
        raise UsageError("--alpha must be in (0, 1) and --threshold >= 0")
    base, p1 = load_frame([args.baseline], frozenset({"samples"}))
    cand, p2 = load_frame([args.candidate], frozenset({"samples"}))
    warn_unreadable(p1 + p2)
    if base.empty or cand.empty:
        raise UsageError("no readable records in " + (args.baseline if base.empty else args.candidate))
    for side, frame in ((args.baseline, base), (args.candidate, cand)):
        if not (frame.status == "ok").any():
            raise UsageError(f"no ok record in {side} (only {', '.join(sorted(set(frame.status)))}): "
                             "nothing to compare on that side")
    results = compare(base, cand, args.threshold, args.alpha)
    if not results:
        raise UsageError("no case appears in both (same workload, size, params, ranks, threads)")
    if args.json:
        print(as_json(results))
    else:
        t = Table(title=f"{args.candidate} vs {args.baseline}", title_justify="left")
        for col in COLUMNS:
            t.add_column(col, overflow="fold")
        for row in as_rows(results):
            t.add_row(*row)
        console.print(t)
        console.print("verdicts: " + ", ".join(f"{n} {v}" for v, n in sorted(summary(results).items()))
                      + f" (Benjamini-Hochberg over {sum(r.q_value is not None for r in results)} tested "
                        f"case(s), false-discovery rate {args.alpha:g})")
    return 1 if any(r.verdict == "slower" for r in results) else 0
