"""``harness history DIRS...``: every run of each case on each machine as a series, its change
points with intervals, and what the records say changed at each (exit 1 on a newest slowdown)."""
from __future__ import annotations

import argparse
import json
import math
import pathlib

from rich.markup import escape

from harness.commands.common import add_confidence_option, console, err_console, table, warn_unreadable
from harness.errors import UsageError
from harness.history.plots import series_figure
from harness.history.series import Series, as_json, build_series, lean, select
from harness.history.steps import METHODS, Step, candidates, family_confidence, find_steps
from harness.results.scan import scan


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("history", help="series of runs per case and machine, their change points and what "
                                       "changed (exit 1 on a slowdown in the newest runs)",
                       description="Read every record of the given results files or folders (many runs, "
                                   "dates, commits), group them into one series per case and machine, "
                                   "oldest run first, and find the steps in each: a candidate from a "
                                   "change-point fit of the run medians counts only when the interval of "
                                   "its ratio (from the runs' scatter, widened for the fit having chosen "
                                   "its place: max-t) excludes 1 and the ratio reaches --threshold; the "
                                   "intervals are family-wise (Bonferroni over all candidates of the "
                                   "command), so the exit status fails on a false step with at most "
                                   "1 - --confidence chance. Each step is explained by what differs "
                                   "in the records before and after it: library, package versions, "
                                   "numerics environment variables, governor/boost/SMT, MPI, placement, "
                                   "commit, hardware. Exit status 1 when a slowdown starts in the newest "
                                   "segment of a series (use it as a CI gate), 0 otherwise.")
    p.add_argument("paths", nargs="+", metavar="PATH", help="results files, results folders or capture folders")
    p.add_argument("--workload", help="only these workloads (names separated by commas)")
    p.add_argument("--case", metavar="TEXT", help="only series whose case label or machine contains TEXT")
    p.add_argument("--threshold", type=float, default=0.05,
                   help="smallest relative change that counts as a step (default 0.05 = 5%%)")
    add_confidence_option(p)
    p.add_argument("--method", choices=METHODS, default="pelt",
                   help="change-point fit: pelt (ruptures, default) or asv (asv.step_detect); "
                        "see benchmarks/change_points.py")
    p.add_argument("--plot", metavar="DIR", help="write one PNG per series with 2+ runs into DIR")
    p.add_argument("--summary", action="store_true", help="one line per series, not a table of its runs")
    p.add_argument("--json", action="store_true", help="print the series and their steps as JSON")
    p.set_defaults(func=main)


def _steps_json(steps: list[Step], level: float) -> list[dict]:
    return [{"kind": s.kind, "ratio": s.ratio, "newest": s.newest, "level": level,
             "interval": [s.low, s.high] if math.isfinite(s.low) and math.isfinite(s.high) else None,
             "before_run": s.before[-1].run_id, "after_run": s.after[0].run_id,
             "changed": [{"name": c.name, "before": c.before, "after": c.after, "consistent": c.consistent}
                         for c in s.changed]} for s in steps]


def _level_text(confidence: float, level: float, n_candidates: int) -> str:
    if n_candidates <= 1:
        return f"{confidence:.0%} intervals"
    return (f"{100 * level:.4g}% intervals: {n_candidates} candidates judged at once, so that any false step "
            f"among them has at most a {1 - confidence:.0%} chance")


def _run_table(series: Series, steps: list[Step]) -> object:
    starts = {s.after[0].run_id: s for s in steps if s.confirmed}
    t = table(escape(f"{series.label} @ {series.machine}"), "run", "created", "commit", "status", "median s [interval]",
              "n", "step")
    for i, p in enumerate(series.points, 1):
        lo_hi = p.interval
        median = f"{p.median:.4g} [{lo_hi[0]:.4g}, {lo_hi[1]:.4g}]" if p.median is not None and lo_hi else ""
        step = starts.get(p.run_id)
        mark = f"{step.kind} x{step.ratio:.3g} [{step.low:.3g}, {step.high:.3g}]" if step else ""
        t.add_row(str(i), p.created[:19].replace("T", " "), p.commit, escape(p.status if p.ok else
                  f"{p.status}: {p.reason[:80]}"), median, str(len(p.samples)), mark)
    return t


def main(args: argparse.Namespace) -> int:
    if not 0 <= args.threshold < 10:
        raise UsageError(f"--threshold {args.threshold}: give a relative change such as 0.05 (5 %)")
    plot_dir = pathlib.Path(args.plot) if args.plot else None
    if plot_dir is not None and plot_dir.exists() and not plot_dir.is_dir():
        raise UsageError(f"--plot {plot_dir}: exists and is not a folder; give a folder for the PNGs")
    records, problems = scan(args.paths, lean)     # what a history needs of each record, in parallel
    warn_unreadable(problems)
    if not records:
        raise UsageError("no readable records in " + " ".join(args.paths))
    workloads = [w.strip() for w in args.workload.split(",") if w.strip()] if args.workload else None
    series = select(build_series(records), workloads, args.case)
    if not series:
        raise UsageError("no series matches --workload/--case (see `harness show` for what the records hold)")
    bounds = {s.key: candidates(s, args.method) for s in series}
    n_candidates = sum(len(b) for b in bounds.values())
    level = family_confidence(args.confidence, n_candidates)     # the gate's false-alarm rate: 1 - confidence
    found = {s.key: find_steps(s, args.threshold, level, args.method, bounds[s.key]) for s in series}
    if plot_dir is not None:
        try:
            plot_dir.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise UsageError(f"--plot {plot_dir}: cannot create the folder ({exc.strerror}); "
                             "give a writable folder") from None
        drawn = [series_figure(s, found[s.key], plot_dir) for s in series if sum(p.ok for p in s.points) >= 2]
        written = [d for d in drawn if d is not None]
        err_console.print(f"{len(written)} plot(s) in {plot_dir}" + (
            f"; {len(drawn) - len(written)} series not drawn (times beyond what a plot can scale)"
            if len(drawn) > len(written) else ""), markup=False)
    newest = [(s, st) for s in series for st in found[s.key] if st.kind == "slowdown" and st.newest]
    if args.json:
        print(json.dumps([{**as_json(s), "steps": _steps_json(found[s.key], level)} for s in series], indent=1))
        return 1 if newest else 0
    summary = table(f"{len(series)} series from {len(records)} record(s)", "case", "machine", "runs", "newest median s",
                    "steps")
    for s in series:
        ok = [p for p in s.points if p.ok]
        steps = found[s.key]
        summary.add_row(escape(s.label), escape(s.machine), f"{len(s.points)} ({len(ok)} ok)",
                        f"{ok[-1].median:.4g}" if ok else "", ", ".join(f"{st.kind} x{st.ratio:.3g}"
                                                                          for st in steps if st.confirmed) or "none")
    console.print(summary)
    for s in series:
        steps = found[s.key]
        if not args.summary and len(s.points) >= 2:
            console.print(_run_table(s, steps))
        for st in steps:
            console.print(escape(st.describe(s)), soft_wrap=True)
    confirmed = sum(st.confirmed for steps in found.values() for st in steps)
    unconfirmed = sum(not st.confirmed for steps in found.values() for st in steps)
    console.print(f"steps: {confirmed} confirmed" + (f", {unconfirmed} candidate(s) the interval did not confirm"
                                                     if unconfirmed else "")
                  + f" (threshold {args.threshold:.0%}, method {args.method}; {_level_text(args.confidence, level, n_candidates)})")
    for s, st in newest:
        err_console.print(f"slowdown in the newest runs: {st.describe(s)}", markup=False)
    return 1 if newest else 0
