"""Predicted parallel efficiency against node count: one panel per profile, one line per CNN."""
from __future__ import annotations

import pathlib
from typing import Any


FIGURE_NAME = "cnn_scaling_model.png"


def plot_scaling(records: list[dict[str, Any]], out_dir: pathlib.Path) -> pathlib.Path | None:
    mine = [r for r in records if r["workload"]["name"] == "cnn_scaling" and r["status"] == "ok"
            and r["metrics"].get("kind") == "model"]
    if not mine:
        return None
    from harness import pyplot, save_figure

    plt = pyplot()

    fig, axes = plt.subplots(1, len(mine), figsize=(4.5 * len(mine), 4), squeeze=False)
    for ax, r in zip(axes[0], mine):
        m = r["metrics"]
        for name in r["params"]["networks"]:
            ax.plot(m["nodes"], m[f"{name}_efficiency"], "o-", ms=3, label=name)
        ax.set_xscale("log", base=2)
        ax.set_ylim(0, 1.05)
        ax.set_xlabel("nodes")
        ax.set_ylabel("parallel efficiency (model)")
        ax.set_title(f"{m['profile']}, B={r['params']['batch']}, {m['link_gbs']:g} GB/s", fontsize=9)
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=7)
    fig.suptitle("cnn_scaling: model predictions (not measurements)")
    return save_figure(fig, pathlib.Path(out_dir) / FIGURE_NAME, dpi=100)
