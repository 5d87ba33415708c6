"""Report figures (matplotlib, PNG bytes): times by machine x backend, scaling, phases, roofline."""
from __future__ import annotations

import io
import json
import statistics
import textwrap
from typing import Any

import pandas as pd

from harness.judging.verdicts import as_number
from harness.output.plotting import plain_log_ticks
from harness.output.plotting import pyplot as _plt
from harness.output.safe_text import one_line
from harness.report.placement import placed


def _png(fig: Any) -> bytes | None:
    """The figure as PNG bytes, or None when matplotlib cannot lay it out (values near the float
    range overflow its tick arithmetic): a report loses that figure, not its tables."""
    buf = io.BytesIO()
    try:
        fig.tight_layout()
        fig.savefig(buf, format="png", dpi=100)
    except (ValueError, OverflowError):
        return None
    finally:
        _plt().close(fig)
    return buf.getvalue()


def wrapped(text: str, width: int = 34) -> str:
    """A label over as many lines as it needs: never cut, so two labels never look alike; a record's
    control characters are shown as escapes, not drawn (or warned about) as glyphs."""
    text = one_line(text)
    return "\n".join(textwrap.wrap(text, width, break_long_words=True, break_on_hyphens=False)) or text


def _label(r: Any) -> str:
    params = "" if r.params == "{}" else f" {r.params}"
    return wrapped(f"{r.backend} {r.ranks}x{r.threads}{params}") + "\n" + wrapped(str(r.machine))


def times_figure(group: pd.DataFrame, workload: str) -> bytes | None:
    """Median time per repeat with its 95% CI, one bar per case."""
    ok = group[(group.status == "ok") & group.median_s.notna()]
    if ok.empty:
        return None
    plt = _plt()
    ok = ok.sort_values(["params", "machine", "backend", "ranks", "threads"]).tail(30)
    fig, ax = plt.subplots(figsize=(max(6, 0.7 * len(ok) + 2), 4.5))
    x = range(len(ok))
    err = [ok.median_s - ok.ci95_low_s, ok.ci95_high_s - ok.median_s]
    ax.bar(x, ok.median_s, yerr=err, capsize=3, color="#4c72b0")
    ax.set_xticks(list(x), [_label(r) for r in ok.itertuples()], rotation=60, ha="right", fontsize=7)
    ax.set_ylabel("median time per repeat (s), 95% CI")
    ax.set_title(f"{one_line(workload)}: time by case")
    return _png(fig)


def scaling_figure(group: pd.DataFrame, workload: str) -> bytes | None:
    """Speed-up and efficiency against ranks, per (params, machine, backend), where >1 rank count ran."""
    ok = group[(group.status == "ok") & group.median_s.notna()]
    lines = [(k, g.sort_values("ranks")) for k, g in ok.groupby(["params", "machine", "backend", "size"])
             if g.ranks.nunique() > 1]
    if not lines:
        return None
    plt = _plt()
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(10, 4))
    for (params, machine, backend, size), g in lines:
        g = g.groupby("ranks", as_index=False).median_s.median()
        base = g.median_s.iloc[0] * g.ranks.iloc[0]
        speedup = base / g.median_s
        label = wrapped(f"{backend} {params if params != '{}' else ''} {machine}", 60)
        a1.plot(g.ranks, speedup, "o-", label=label)
        a2.plot(g.ranks, speedup / g.ranks, "o-", label=label)
    a1.set_title("speed-up (vs the smallest rank count)")
    a2.set_title("parallel efficiency")
    for ax in (a1, a2):
        ax.set_xlabel("MPI ranks")
        ax.grid(True, alpha=0.3)
    a1.legend(fontsize=6)
    return _png(fig)


def phases_figure(group: pd.DataFrame, workload: str) -> bytes | None:
    """Phase seconds per repeat (slowest rank), stacked, one bar per case."""
    ok = group[(group.status == "ok") & group.phases.map(lambda t: bool(t) and t != "{}")].tail(30)
    if ok.empty:
        return None
    plt = _plt()
    phases = [json.loads(t) if isinstance(t, str) else t for t in ok.phases]   # the frame keeps JSON text
    names = sorted({n for p in phases for n in p})
    fig, ax = plt.subplots(figsize=(max(6, 0.7 * len(ok) + 2), 4.5))
    bottom = [0.0] * len(ok)
    for name in names:
        vals = [p.get(name, 0.0) for p in phases]
        ax.bar(range(len(ok)), vals, bottom=bottom, label=one_line(name))
        bottom = [b + v for b, v in zip(bottom, vals)]
    ax.set_xticks(list(range(len(ok))), [_label(r) for r in ok.itertuples()], rotation=60, ha="right", fontsize=7)
    ax.set_ylabel("seconds per repeat (slowest rank)")
    ax.set_title(f"{one_line(workload)}: phase breakdown")
    ax.legend(fontsize=7)
    return _png(fig)


def roofline_ceilings(ceilings: dict[str, str], metrics: dict[str, Any]) -> tuple[float, float] | None:
    """(GFLOP/s, GB/s) of a record's first declared compute and bandwidth ceilings, or None."""
    def first(unit: str) -> float | None:
        return next((v for metric, u in ceilings.items()
                     if u == unit and (v := as_number(metrics.get(metric))) is not None), None)
    peak, bandwidth = first("GFLOP/s"), first("GB/s")
    return (peak, bandwidth) if peak and bandwidth else None


def roofline_figure(df: pd.DataFrame) -> bytes | None:
    """Measured ceilings (records whose workload declares a GFLOP/s and a GB/s ceiling) as rooflines."""
    from harness.output.plotting import draw_rooflines

    pairs: dict[str, list[tuple[float, float]]] = {}
    for r in df.itertuples():
        pair = roofline_ceilings(r.ceilings, r.metrics) if r.status == "ok" and r.ceilings and r.metrics else None
        if pair:
            pairs.setdefault(one_line(f"{r.backend} {r.threads} thr, {r.machine}"), []).append(pair)
    # one roofline per machine, backend and thread count (the median of its records), however many ran
    lines = [(label, statistics.median(p for p, _ in got), statistics.median(b for _, b in got))
             for label, got in pairs.items()]
    if not lines:
        return None
    plt = _plt()
    fig, ax = plt.subplots(figsize=(7, 4.5))
    drawn = draw_rooflines(ax, lines, "measured rooflines, with the cases that report their work")
    colour = {}
    for (label, _, _), line in zip(lines, drawn):
        colour.setdefault(label.split(", ", 1)[1], line.get_color())
    for r in df.itertuples():   # each case at its intensity and achieved rate, on its machine's colour
        work = r.metrics if r.status == "ok" and isinstance(r.metrics, dict) else {}
        flops = sum(v for k, v in work.items() if k.startswith("work_flops_") and isinstance(v, (int, float)))
        moved = work.get("work_bytes")
        if flops and isinstance(moved, (int, float)) and moved > 0 and r.median_s:
            c = colour.get(one_line(r.machine))
            if c is not None:
                ax.plot(flops / moved, flops / r.median_s / 1e9, "o", color=c)
                ax.annotate(r.workload, (flops / moved, flops / r.median_s / 1e9), fontsize=6,
                            xytext=(3, 3), textcoords="offset points")
    for r, ph in placed(df):   # counted phases whose bytes were counted too, at their intensity
        c = colour.get(one_line(r.machine))
        if c is not None and ph.get("flop_per_byte") and ph.get("dtype") == "fp64":
            ax.plot(ph["flop_per_byte"], ph["gflops"], "s", color=c, markerfacecolor="none")
            ax.annotate(f"{r.workload}:{ph['phase']}", (ph["flop_per_byte"], ph["gflops"]), fontsize=6,
                        xytext=(3, -8), textcoords="offset points")
    return _png(fig)


def placement_figures(df: pd.DataFrame) -> list[tuple[str, bytes]]:
    """Per machine: every counted phase as a point at its achieved GFLOP/s (log axis), one row per
    phase, with the machine's GEMM ceilings and peaks per precision as vertical lines (read back
    from the fractions the records hold)."""
    by_machine: dict[str, list[tuple[str, dict[str, Any]]]] = {}
    for r, ph in placed(df):
        label = f"{r.workload}[{r.size}] {r.ranks}x{r.threads} {ph['phase']} ({ph.get('dtype') or '?'})"
        by_machine.setdefault(one_line(r.machine), []).append((label, ph))
    figures = []
    for machine, points in sorted(by_machine.items()):
        points = sorted(points, key=lambda item: item[1]["gflops"])
        plt = _plt()
        fig, ax = plt.subplots(figsize=(8, 2.2 + 0.3 * len(points)))
        lines: dict[tuple[str, str], list[float]] = {}
        for i, (label, ph) in enumerate(points):
            colour = "tab:blue" if ph.get("dtype") == "fp32" else "tab:red"
            ax.plot(ph["gflops"], i, "o", color=colour)
            for what, key in (("GEMM ceiling", "fraction_of_gemm_ceiling"), ("peak", "fraction_of_peak")):
                if ph.get(key):
                    lines.setdefault((what, ph.get("dtype") or "?"), []).append(ph["gflops"] / ph[key])
        for (what, dtype), values in sorted(lines.items()):
            style = "-" if what == "GEMM ceiling" else ":"
            value = max(values)   # per case the ceiling is scaled to its cores: the widest case's
            ax.axvline(value, linestyle=style, color="tab:blue" if dtype == "fp32" else "tab:red", alpha=0.7,
                       label=f"{dtype} {what} {value:.3g} GFLOP/s")
        ax.set_yticks(range(len(points)), [label for label, _ in points], fontsize=7)
        ax.set_xscale("log")
        plain_log_ticks(ax)
        ax.set_ylim(-0.7, len(points) - 0.3)
        ax.set_xlabel("achieved GFLOP/s (blue fp32, red fp64; lines: the widest case's ceiling and peak)")
        ax.set_title(f"{machine}:\ncompute phases against the GEMM ceiling and the peak", fontsize=9)
        ax.grid(True, axis="x", which="both", alpha=0.3)
        if lines:
            ax.legend(fontsize=6, loc="upper center", bbox_to_anchor=(0.5, -0.25), ncol=2)
        figures.append((f"{machine}: compute phases on the roofline", _png(fig)))
    return figures


def workload_figures(group: pd.DataFrame, workload: str) -> list[tuple[str, bytes]]:
    figures = []
    for title, fn in (("time by case", times_figure), ("scaling", scaling_figure), ("phases", phases_figure)):
        png = fn(group, workload)
        if png:
            figures.append((title, png))
    return figures


def machine_figures(wide: pd.DataFrame | None) -> list[tuple[str, bytes, list[str]]]:
    """Grouped bars, one group per matched case and one bar per machine: the speed-up over the
    reference machine with its bootstrap interval as whiskers. ``wide``: the report's
    :func:`~harness.report.machines.report_table` (None: one machine, no figure). Cases are
    numbered on the axis; the third item is the legend, the full case label of each number."""
    from harness.report.machines import case_label

    if wide is None:
        return []
    names = wide.attrs.get("machines", [])
    cols = [m for m in names[1:] if f"{m} | speedup_vs_ref" in wide]
    if wide.empty or not cols:
        return []
    shown = wide.dropna(subset=[f"{m} | speedup_vs_ref" for m in cols], how="all").head(30)
    if shown.empty:
        return []
    plt = _plt()
    width = 0.8 / len(cols)
    fig, ax = plt.subplots(figsize=(8, 0.35 * len(shown) * len(cols) + 1.5))
    for j, m in enumerate(cols):
        ys = [i + j * width for i in range(len(shown))]
        est = shown[f"{m} | speedup_vs_ref"].astype(float)
        lo = shown.get(f"{m} | speedup_low", est).astype(float).fillna(est)
        hi = shown.get(f"{m} | speedup_high", est).astype(float).fillna(est)
        ax.barh(ys, est, height=width, label=wrapped(m, 60),
                xerr=[(est - lo).clip(lower=0), (hi - est).clip(lower=0)], capsize=2)
    ax.axvline(1.0, color="#444", linewidth=0.8)
    ax.set_yticks([i + width * (len(cols) - 1) / 2 for i in range(len(shown))])
    legend = [case_label(r) for _, r in shown.iterrows()]
    ax.set_yticklabels([f"case {i}" for i in range(1, len(shown) + 1)], fontsize=7)
    ax.set_xscale("log")
    plain_log_ticks(ax)
    from matplotlib.ticker import FuncFormatter
    ax.xaxis.set_minor_formatter(FuncFormatter(lambda v, _: f"{v:g}" if str(f"{v:g}")[0] in "1235" else ""))
    ax.tick_params(axis="x", which="minor", labelsize=7)
    ax.set_xlabel(wrapped(f"speed-up over {names[0]}", 80)
                  + "\n(log scale; whiskers: 95% bootstrap interval; none: 1 repeat)")
    ax.invert_yaxis()
    ax.legend(fontsize=7, loc="best")
    png = _png(fig)
    return [("speed-up per matched case and machine", png, [f"case {i}: {t}" for i, t in enumerate(legend, 1)])] if png else []


def cascade_figure(entries: list[dict[str, Any]]) -> list[tuple[str, bytes, list[str]]]:
    """Performance portability as a cascade plot (Sewall, Pennycook et al.; p3analysis draws the
    same): per workload, its machines sorted from the most to the least efficient, each one's
    application efficiency (markers) and the PP of the machines up to it (the line, the harmonic
    mean, which the least efficient machine pulls down); the last point of a line is the
    workload's PP. Machines are numbered on the axis; the third item is the legend of the numbers."""
    drawn = cascade_axes(entries)
    if drawn is None:
        return []
    fig, legend = drawn
    png = _png(fig)
    return [("performance portability: cascade per workload", png, legend)] if png else []


def cascade_axes(entries: list[dict[str, Any]]) -> tuple[Any, list[str]] | None:
    """The cascade plot's figure, laid out, and its legend (None: no workload with 2+ machines)."""
    shown = [e for e in entries if e.get("efficiency") and len(e["efficiency"]) >= 2]
    if not shown:
        return None
    machines = list(dict.fromkeys(m for e in shown for m in e["efficiency"]))
    number = {m: i for i, m in enumerate(machines, 1)}
    plt = _plt()
    most = max(len(e["efficiency"]) for e in shown)
    fig, ax = plt.subplots(figsize=(7, 4.2))
    for e in shown:
        ranked = sorted(e["efficiency"].items(), key=lambda kv: -kv[1])
        xs = list(range(1, len(ranked) + 1))
        effs = [v for _, v in ranked]
        cascade = [len(effs[:k]) / sum(1.0 / v for v in effs[:k]) if all(v > 0 for v in effs[:k]) else 0.0
                   for k in xs]
        line = ax.plot(xs, cascade, "-", linewidth=1.5, label=wrapped(f"{e['workload']}: PP {cascade[-1]:.2f}", 40))[0]
        ax.plot(xs, effs, "o", color=line.get_color(), markersize=5)
        for x, (m, v) in zip(xs, ranked):
            ax.annotate(str(number[m]), (x, v), textcoords="offset points", xytext=(4, 3), fontsize=7,
                        color=line.get_color())
    ax.set_xlim(0.7, most + 0.3)
    ax.set_xticks(range(1, most + 1))
    ax.set_ylim(0, 1.08)
    ax.set_yticks([0, 0.2, 0.4, 0.6, 0.8, 1.0])
    ax.set_xlabel("machines, most efficient first (numbers: the legend below)")
    ax.set_ylabel("application efficiency (markers)\nPP of the machines so far (lines)")
    ax.legend(fontsize=7, loc="lower left")
    fig.tight_layout()
    return fig, [f"{i}: {m}" for m, i in number.items()]

