"""dpmm figures: time per iteration against N and against D (one line per rank count), NMI curves."""
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
    from harness.plotting import pyplot, save_figure

    plt = pyplot()

    fig, axes = plt.subplots(1, 3, figsize=(14, 4))
    for ax, key in zip(axes[:2], ("n", "d")):
        lines: dict[int, list[tuple[float, float]]] = defaultdict(list)
        for r in mine:
            lines[r["launch"]["ranks"]].append((r["metrics"][key], r["metrics"]["iteration_s"]))
        for ranks, pts in sorted(lines.items()):
            pts.sort()
            ax.plot([p[0] for p in pts], [p[1] for p in pts], "o-", label=f"{ranks} ranks")
        ax.set_xscale("log")
        ax.set_xlabel(key.upper())
        ax.set_ylabel("seconds per iteration")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8)
    for r in mine:
        curve = r["metrics"].get("nmi_curve") or []
        if len(curve) > 1:
            axes[2].plot(curve, label=f"N={r['params']['n']} D={r['params']['d']} r{r['launch']['ranks']}")
    axes[2].set_xlabel("iteration")
    axes[2].set_ylabel("NMI vs ground truth")
    if axes[2].get_lines():
        axes[2].legend(fontsize=7)
    fig.suptitle("dpmm: sub-cluster split/merge sampler")
    return save_figure(fig, pathlib.Path(out_dir) / FIGURE_NAME, dpi=100)
