"""The paper's figure: comm time, compute time and accuracy against msf, one line per rank count."""
from __future__ import annotations

import pathlib
from collections import defaultdict
from typing import Any

FIGURE_NAME = "psgd_svm_msf.png"


def plot_msf_sweep(records: list[dict[str, Any]], out_dir: pathlib.Path) -> pathlib.Path | None:
    """Draw the figure when the ok psgd_svm records of a run cover at least two msf values."""
    mine = [r for r in records if r["workload"]["name"] == "psgd_svm"
            and r["params"]["algorithm"] == "parallel" and r["status"] == "ok"]
    if len({r["params"]["msf"] for r in mine}) < 2:
        return None
    from harness import plain_log_ticks, pyplot, save_figure

    plt = pyplot()

    lines: dict[tuple, list[dict[str, Any]]] = defaultdict(list)
    for r in mine:
        lines[(r["launch"]["ranks"], r["params"]["dataset"], r["size"])].append(r)
    fig, axes = plt.subplots(1, 3, figsize=(13, 4))
    for (ranks, dataset, size), recs in sorted(lines.items()):
        recs.sort(key=lambda r: r["params"]["msf"])
        msf = [r["params"]["msf"] for r in recs]
        label = f"{ranks} ranks, {dataset} [{size}]"
        axes[0].plot(msf, [r["metrics"]["comm_s"] for r in recs], "o-", label=label)
        axes[1].plot(msf, [r["metrics"]["compute_s"] for r in recs], "o-", label=label)
        axes[2].plot(msf, [100 * r["metrics"]["accuracy"] for r in recs], "o-", label=label)
    for ax, title in zip(axes, ("communication time (s)", "computation time (s)", "test accuracy (%)")):
        ax.set_xscale("log", base=2)
        ax.set_xlabel("model synchronisation frequency msf (samples)")
        ax.set_title(title)
        ax.grid(True, alpha=0.3)
    axes[0].set_yscale("log")
    plain_log_ticks(axes[0])
    axes[0].legend(fontsize=8)
    fig.suptitle("psgd_svm: last measured repeat per case (metrics of the record)")
    return save_figure(fig, pathlib.Path(out_dir) / FIGURE_NAME, dpi=110)
