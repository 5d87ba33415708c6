"""``harness model RESULTS --x ranks``: Extra-P's scaling model of every sweep in the records."""
from __future__ import annotations

import argparse
import pathlib
import tempfile

from rich.markup import escape

from harness.commands.common import console, err_console, table
from harness.commands.options import add_records_options, out_folder, selected_records
from harness.errors import UsageError
from harness.export.extrap import (MIN_POINTS, MIN_REPETITIONS, evaluate, families, find_extrap, fit,
                                   safe_param_name, write_jsonl)


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("model", help="fit Extra-P scaling models to the sweeps in results",
                       description="For every sweep over --x in the records (same workload, work version, "
                                   "machine, size, backend, launch and other params), fit Extra-P models of "
                                   "the seconds per repeat, of each phase and of the communication bytes "
                                   "against --x, with Extra-P's own `extrap` command (installed apart: it pins "
                                   "numpy<2; --extrap, $HARNESS_EXTRAP or PATH). Prints each model's formula, "
                                   "SMAPE and adjusted R^2, the points and repetitions behind it (a warning "
                                   f"below {MIN_POINTS} points x {MIN_REPETITIONS} repetitions, Extra-P's "
                                   "guidance) and, with --predict, its value at a larger scale. --out keeps "
                                   "each sweep as Extra-P JSON Lines, for the Extra-P GUI.")
    add_records_options(p, "keep each sweep's Extra-P JSON Lines file in DIR (created)")
    p.add_argument("--x", required=True, metavar="PARAM",
                   help="the swept parameter: ranks, threads, or a numeric workload param (e.g. n, triad_mib)")
    p.add_argument("--predict", type=float, metavar="VALUE", help="also each model's value at --x = VALUE")
    p.add_argument("--extrap", metavar="PATH", help="the extrap command (default: $HARNESS_EXTRAP, else PATH)")
    p.add_argument("--all-callpaths", action="store_true",
                   help="print the model of every phase too (default: the whole case and its communication bytes)")
    p.set_defaults(func=main)


def main(args: argparse.Namespace) -> int:
    extrap = find_extrap(args.extrap)
    out = out_folder(args.out)
    found = families(selected_records(args.results, args.workload), args.x)
    if not found:
        raise UsageError(f"no sweep over {args.x!r} in {', '.join(args.results)}: a sweep is ok records of one "
                         f"workload, machine and case that differ only in {args.x} (at least two values); run "
                         f"one with e.g. --ranks 1,2 or --param {args.x}=V1,V2,...")
    name = safe_param_name(args.x)
    rows = table(f"Extra-P models against {args.x}", "sweep", "callpath", "metric", "model", "SMAPE %", "adj. R^2",
                 "points x reps", *([f"at {args.x}={args.predict:g}"] if args.predict is not None else []))
    warned = []
    with tempfile.TemporaryDirectory(prefix="harness-extrap-") as tmp:
        folder = out or pathlib.Path(tmp)
        folder.mkdir(parents=True, exist_ok=True)
        for i, family in enumerate(sorted(found, key=lambda f: f.name)):
            path = folder / f"{i:02d}-{safe_param_name(family.workload)}-{name}.jsonl"
            write_jsonl(family, path)
            points, reps = len(family.points), family.repetitions()
            shape = f"{points} x {reps}"
            if points < MIN_POINTS or reps < MIN_REPETITIONS:
                warned.append(f"{family.name}: {shape} (points x repetitions) is below Extra-P's "
                              f"{MIN_POINTS} x {MIN_REPETITIONS}: read its model as a sketch")
            for m in fit(extrap, path):
                if not args.all_callpaths and "->" in m.callpath:
                    continue
                cells = [family.name, m.callpath, m.metric, m.formula, f"{m.smape:.3g}", f"{m.ar2:.3g}", shape]
                if args.predict is not None:
                    try:
                        cells.append(f"{evaluate(m.formula, name, args.predict):.4g}")
                    except (ValueError, ZeroDivisionError, OverflowError) as exc:
                        cells.append(f"- ({exc})")
                rows.add_row(*map(escape, cells))
    console.print(rows)
    for w in warned:
        err_console.print(f"warning: {w}", markup=False)
    if out is not None:
        console.print(f"Extra-P JSON Lines of {len(found)} sweep(s) in {out} (open them in extrap-gui)", markup=False)
    return 0
