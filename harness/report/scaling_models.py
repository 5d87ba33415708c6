"""The html report's scaling models (``harness report --models ranks,n``): for every sweep over
each named parameter, the measured points and Extra-P's fitted curve (harness/export/extrap.py
finds the sweeps and runs Extra-P; nothing is fitted here)."""
from __future__ import annotations

import pathlib
import statistics
import tempfile
from collections.abc import Iterator

from harness.export.extrap import evaluate, families, fit, safe_param_name, write_jsonl
from harness.report.plots import _png, wrapped
from harness.output.plotting import pyplot as _plt
from harness.results.store import load_records


def model_figures(inputs: list[str], xs: list[str], extrap: str) -> Iterator[tuple[str, bytes, list[str]]]:
    """(title, png, caption) per sweep: each point's median seconds per repeat with its range over
    the repeats, and the model of the whole case's time against the swept parameter."""
    records, _ = load_records(inputs)
    with tempfile.TemporaryDirectory(prefix="harness-report-models-") as tmp:
        for x in xs:
            name = safe_param_name(x)
            for i, family in enumerate(sorted(families(records, x), key=lambda f: f.name)):
                path = pathlib.Path(tmp) / f"{name}-{i}.jsonl"
                write_jsonl(family, path)
                model = next((m for m in fit(extrap, path) if m.callpath == family.workload and m.metric == "time"),
                             None)
                if model is None:
                    continue
                png = _figure(family, model, x, name)
                if png:
                    caption = [f"model: {model.formula}", f"SMAPE {model.smape:.3g} %, adjusted R^2 {model.ar2:.3g}",
                               f"{len(family.points)} points x {family.repetitions()} repetitions (Extra-P asks for 5 x 5)"]
                    yield f"{family.name}: seconds per repeat against {x}", png, caption


def _figure(family, model, x: str, name: str) -> bytes | None:  # noqa: ANN001
    plt = _plt()
    xs = sorted(family.points)
    samples = [[s for r in family.points[v] for s in r.samples] for v in xs]
    medians = [statistics.median(s) for s in samples]
    fig, ax = plt.subplots(figsize=(6, 3.6))
    ax.errorbar(xs, medians, yerr=[[m - min(s) for m, s in zip(medians, samples)],
                                    [max(s) - m for m, s in zip(medians, samples)]],
                fmt="o", capsize=3, label="measured: median, range over repeats")
    lo, hi = xs[0], xs[-1]
    grid = [lo + (hi - lo) * k / 100 for k in range(101)]
    try:
        curve = [evaluate(model.formula, name, g) for g in grid]
    except (ValueError, ZeroDivisionError, OverflowError):
        curve = None
    if curve is not None:
        ax.plot(grid, curve, "-", label=wrapped("Extra-P: " + model.formula, 60))
    ax.set_xlabel(x)
    ax.set_ylabel("seconds per repeat")
    ax.set_title(wrapped(family.name, 70), fontsize=8)
    ax.legend(fontsize=7)
    return _png(fig)
