"""``harness model RESULTS --x ranks``: Extra-P's scaling model of every sweep in the records."""
from __future__ import annotations

import argparse
import math
import pathlib
import statistics
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
    p.add_argument("--predict", metavar="[PARAM=]VALUE",
                   help="also each model's value at --x = VALUE (e.g. ranks=64), with the spread the model "
                        "had over the measured points: [value x (1 + lowest), value x (1 + highest) relative residual]")
    p.add_argument("--extrap", metavar="PATH", help="the extrap command (default: $HARNESS_EXTRAP, else PATH)")
    p.add_argument("--all-callpaths", action="store_true",
                   help="print the model of every phase too (default: the whole case and its communication bytes)")
    p.set_defaults(func=main)


def predict_value(text: str | None, x: str) -> float | None:
    """``--predict`` as a number: ``VALUE`` or ``PARAM=VALUE`` with PARAM the swept one."""
    if text is None:
        return None
    name, _, value = text.rpartition("=")
    if name and name != x:
        raise UsageError(f"--predict {text}: the model is against {x}; give --predict {x}=VALUE")
    try:
        number = float(value)
    except ValueError:
        raise UsageError(f"--predict {text}: not a number; give e.g. --predict {x}=64") from None
    if not math.isfinite(number):
        raise UsageError(f"--predict {text}: give a finite number")
    return number


def residual_range(family, model, name: str) -> tuple[float, float] | None:  # noqa: ANN001
    """The lowest and highest relative residual (measured median / model - 1) of ``model`` over
    the family's points, 0 included: how far the model was off where it was measured."""
    medians: dict[float, list[float]] = {}
    for line in family.lines():
        if line["callpath"] == model.callpath and line["metric"] == model.metric:
            medians.setdefault(line["params"][name], []).extend(line["value"])
    ratios = []
    for x, values in medians.items():
        try:
            fitted = evaluate(model.formula, name, x)
        except (ValueError, ZeroDivisionError, OverflowError):
            return None
        if fitted:
            ratios.append(statistics.median(values) / fitted - 1.0)
    return (min(0.0, *ratios), max(0.0, *ratios)) if ratios else None


def main(args: argparse.Namespace) -> int:
    predict = predict_value(args.predict, args.x)
    extrap = find_extrap(args.extrap)
    out = out_folder(args.out)
    found = families(selected_records(args.results, args.workload), args.x)
    if not found:
        raise UsageError(f"no sweep over {args.x!r} in {', '.join(args.results)}: a sweep is ok records of one "
                         f"workload, machine and case that differ only in {args.x} (at least two values); run "
                         f"one with e.g. --ranks 1,2 or --param {args.x}=V1,V2,...")
    name = safe_param_name(args.x)
    rows = table(f"Extra-P models against {args.x}", "sweep", "callpath", "metric", "model", "SMAPE %", "adj. R^2",
                 "points x reps", *([f"at {args.x}={predict:g} [spread]"] if predict is not None else []))
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
                if predict is not None:
                    try:
                        value = evaluate(m.formula, name, predict)
                    except (ValueError, ZeroDivisionError, OverflowError) as exc:
                        cells.append(f"- ({exc})")
                    else:
                        spread = residual_range(family, m, name)
                        cells.append(f"{value:.4g}" + (f" [{value * (1 + spread[0]):.4g}, {value * (1 + spread[1]):.4g}]"
                                                       if spread else ""))
                rows.add_row(*map(escape, cells))
    console.print(rows)
    for w in warned:
        err_console.print(f"warning: {w}", markup=False)
    if out is not None:
        console.print(f"Extra-P JSON Lines of {len(found)} sweep(s) in {out} (open them in extrap-gui)", markup=False)
    return 0
