"""The measured roofline: min(peak GFLOP/s, intensity x GB/s) per backend and thread count."""
from __future__ import annotations

import pathlib
from typing import Any

import numpy as np

FIGURE_NAME = "roofline.png"


def plot_roofline(records: list[dict[str, Any]], out_dir: pathlib.Path) -> pathlib.Path | None:
    mine = [r for r in records if r["workload"]["name"] == "roofline" and r["status"] == "ok"
            and "peak_gflops_fp64" in r["metrics"]]
    if not mine:
        return None
    from harness.plotting import pyplot, save_figure

    plt = pyplot()

    fig, ax = plt.subplots(figsize=(7, 5))
    ai = np.logspace(-2, 3, 200)
    for r in mine:
        m = r["metrics"]
        label = f"{r['backend']['requested'] or 'numpy'}, {r['launch']['threads']} thr"
        line, = ax.plot(ai, np.minimum(m["peak_gflops_fp64"], ai * m["triad_gbs"]), label=label)
        points = sorted((int(k.rsplit("_n", 1)[1]), v) for k, v in m.items() if k.startswith("gflops_fp64_n"))
        # GEMM of order n moves at least 3 n^2 doubles for 2 n^3 flops: intensity n/12 flop/byte.
        ax.plot([n / 12 for n, _ in points], [v for _, v in points], "o", color=line.get_color())
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("arithmetic intensity (flop/byte)")
    ax.set_ylabel("fp64 GFLOP/s")
    ax.set_title(f"measured roofline on {mine[0]['hardware']['cpu']['model']} (dots: DGEMM n/12)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    return save_figure(fig, pathlib.Path(out_dir) / FIGURE_NAME, dpi=110)
