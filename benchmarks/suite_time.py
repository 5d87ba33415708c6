"""Where the main job's time goes: each case of a suite run, its wall time split into the timed
repeats, the workload's setup and the rest (start-up, imports, warm-up repeats, tracing,
teardown and verification), against the per-case budget of 4 minutes (issue 57).

    python benchmarks/suite_time.py RESULTS_DIR            # a finished `harness run --suite all --out DIR`
    python benchmarks/suite_time.py RESULTS_DIR --run      # run `harness run --suite all` into it first

It reads the records only (duration_s, samples, resources.setup_s); the last line is the figure a
README may quote, with the machine it was measured on.
"""
from __future__ import annotations

import argparse
import pathlib
import subprocess
import sys

BUDGET_S = 240.0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("results", type=pathlib.Path, help="the results folder of a suite run")
    ap.add_argument("--run", action="store_true", help="run `harness run --suite SUITE --out RESULTS` first")
    ap.add_argument("--suite", default="all")
    args = ap.parse_args()
    if args.run:
        subprocess.run([sys.executable, "-m", "harness", "run", "--suite", args.suite, "--out", str(args.results)],
                       check=False)
    from harness.results.store import load_records

    records, problems = load_records([str(args.results)])
    for p in problems:
        print(f"warning: {p}", file=sys.stderr)
    if not records:
        print(f"no records in {args.results}", file=sys.stderr)
        return 2
    rows, total = [], 0.0
    for r in records:
        timed = sum(r.samples)
        setup = float(((r.resources or {}).get("setup_s") or {}).get("max") or 0.0)
        rest = max(0.0, r.duration_s - timed - setup)
        total += r.duration_s
        rows.append((r.duration_s, r.case_id, r.status, timed, setup, rest))
    print(f"{'case':70} {'status':8} {'wall s':>8} {'timed':>7} {'setup':>7} {'rest':>7} {'timed %':>8}")
    for wall, case, status, timed, setup, rest in sorted(rows, reverse=True):
        flag = "  OVER 4 min" if wall > BUDGET_S else ""
        share = f"{100 * timed / wall:.0f}" if wall > 0 else "-"
        print(f"{case[:70]:70} {status:8} {wall:8.1f} {timed:7.1f} {setup:7.1f} {rest:7.1f} {share:>8}{flag}")
    timed_all = sum(row[3] for row in rows)
    over = sum(row[0] > BUDGET_S for row in rows)
    machine = records[0].machine
    print(f"\n{len(rows)} case(s): {total / 60:.1f} min of case wall time, {100 * timed_all / total:.0f} % of it in "
          f"timed repeats; {over} case(s) over {BUDGET_S / 60:.0f} min")
    print(f"suite {args.suite}: {total / 60:.1f} min of cases on {machine}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
