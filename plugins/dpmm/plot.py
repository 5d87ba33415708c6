"""dpmm figures: time per iteration against N and against D (one line per likelihood, fixed
other dimension and rank count), and NMI curves."""
from __future__ import annotations

import pathlib
from collections import defaultdict
from typing import Any

FIGURE_NAME = "dpmm.png"


def plot_dpmm(records: list[dict[str, Any]], out_dir: pathlib.Path) -> pathlib.Path | None:
    mine = [r for r in records if r["workload"]["name"] == "dpmm" and r["status"] == "ok"
            and r["params"].get("application", "clustering") == "clustering"]
    if not mine:
        return None
    from harness import plain_log_ticks, pyplot, save_figure

    plt = pyplot()

    fig, axes = plt.subplots(1, 3, figsize=(14, 4))
    for ax, key, fixed in zip(axes[:2], ("n", "d"), ("d", "n")):
        # A sweep of `key` is a series of records that agree on everything else that matters.
        series: dict[tuple[str, int, int], dict[float, float]] = defaultdict(dict)
        for r in mine:
            m = r["metrics"]
            name = (m.get("likelihood", "gaussian"), m[fixed], r["launch"]["ranks"])
            series[name][m[key]] = m["iteration_s"]  # the latest record wins
        for (lik, other, ranks), pts in sorted(series.items()):
            if len(pts) < 2:
                continue
            xs = sorted(pts)
            ax.plot(xs, [pts[x] for x in xs], "o-", label=f"{lik}, {fixed.upper()}={other:g}, {ranks} ranks")
        ax.set_xscale("log")
        plain_log_ticks(ax)
        ticks = sorted({x for line in ax.get_lines() for x in line.get_xdata()})
        if ticks:
            ax.minorticks_off()
            ax.set_xticks(ticks, [f"{t:g}" for t in ticks])
        ax.set_xlabel(key.upper())
        ax.set_ylabel("seconds per iteration")
        ax.set_title(f"against {key.upper()}", fontsize=10)
        ax.grid(True, alpha=0.3)
        if ax.get_lines():
            ax.legend(fontsize=7)
        else:
            ax.text(0.5, 0.5, f"no {key.upper()} sweep in these records", ha="center", transform=ax.transAxes)
    for r in mine:
        curve = r["metrics"].get("nmi_curve") or []
        if len(curve) > 1:
            axes[2].plot(curve, label=f"N={r['params']['n']} D={r['params']['d']} r{r['launch']['ranks']}")
    axes[2].set_xlabel("iteration")
    axes[2].set_ylabel("NMI vs ground truth")
    if axes[2].get_lines():
        axes[2].legend(fontsize=7)
    else:
        axes[2].text(0.5, 0.5, "no NMI curves (nmi_curve=false)", ha="center", transform=axes[2].transAxes)
    fig.suptitle("dpmm: sub-cluster split/merge sampler")
    return save_figure(fig, pathlib.Path(out_dir) / FIGURE_NAME, dpi=100)
