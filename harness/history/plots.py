"""One figure per series: each run's median with its interval, the fitted levels, the steps."""
from __future__ import annotations

import math
import pathlib
import re

import numpy as np

from harness.history.series import Series
from harness.history.steps import Step
from harness.output.plotting import pyplot, save_figure
from harness.output.safe_text import one_line


def file_name(series: Series) -> str:
    """A file name from the series' key: letters, digits, ``-_.=`` kept, the rest ``_``."""
    return re.sub(r"[^A-Za-z0-9._=-]+", "_", series.key)[:150].strip("_") + ".png"


PLOTTABLE = 1e300     # beyond this matplotlib's axis arithmetic overflows


def series_figure(series: Series, steps: list[Step], out_dir: pathlib.Path) -> pathlib.Path | None:
    """The series' figure, or None when its values cannot be drawn (beyond PLOTTABLE, not finite)."""
    runs = [p for p in series.points if p.ok]
    med = [p.median for p in runs]
    bounds = [v for p in runs for v in (p.median, *(p.interval or ()))]
    if not all(math.isfinite(v) and abs(v) < PLOTTABLE for v in bounds):
        return None
    # a stored interval that misses the median (a record made elsewhere) draws as no whisker there
    lo = [max(0.0, p.median - p.interval[0]) for p in runs]    # type: ignore[index,operator]
    hi = [max(0.0, p.interval[1] - p.median) for p in runs]    # type: ignore[index,operator]
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(max(5.0, 0.35 * len(runs) + 3), 3.6))
    x = list(range(1, len(runs) + 1))
    ax.errorbar(x, med, yerr=[lo, hi], fmt="o", capsize=3, label="median [interval] per run")
    bounds = [0] + [runs.index(s.after[0]) for s in steps if s.confirmed] + [len(runs)]
    for a, b in zip(bounds, bounds[1:]):     # each segment's level: the median of its pooled samples
        level = float(np.median(np.concatenate([p.samples for p in runs[a:b]])))
        ax.hlines(level, a + 0.6, b + 0.4, colors="grey", linestyles="-", alpha=0.6)
    for s in steps:
        at = runs.index(s.after[0]) + 0.5
        colour = {"slowdown": "red", "speed-up": "green"}.get(s.kind, "grey")
        ax.axvline(at, color=colour, linestyle="--" if s.confirmed else ":")
        ax.annotate(f"{s.kind} x{s.ratio:.3g}", (at, max(med)), fontsize=7, color=colour, rotation=90,
                    va="top", ha="right")
    number = {id(p): i for i, p in enumerate(series.points, 1)}     # as in the series' table
    ax.set_xticks(x, [f"{number[id(p)]} {p.commit[:7]}" for p in runs], rotation=60, fontsize=7)
    ax.set_xlabel("run and commit, oldest first")
    ax.set_ylabel("seconds per repeat")
    ax.set_title(f"{one_line(series.label)}\n{one_line(series.machine)}", fontsize=8)
    ax.grid(True, alpha=0.3)
    return save_figure(fig, out_dir / file_name(series))
