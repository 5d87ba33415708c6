"""The measured roofline: min(peak GFLOP/s, intensity x GB/s) per backend and thread count."""
from __future__ import annotations

import pathlib
from typing import Any

FIGURE_NAME = "roofline.png"


def plot_roofline(records: list[dict[str, Any]], out_dir: pathlib.Path) -> pathlib.Path | None:
    mine = [r for r in records if r["workload"]["name"] == "roofline" and r["status"] == "ok"
            and "peak_gflops_fp64" in r["metrics"]]
    if not mine:
        return None
    from harness import draw_rooflines, pyplot, save_figure

    fig, ax = pyplot().subplots(figsize=(7, 5))
    ceilings = [(f"{r['backend']['requested'] or 'numpy'}, {r['launch']['threads']} thr",
                 r["metrics"]["peak_gflops_fp64"], r["metrics"]["triad_gbs"]) for r in mine]
    title = f"measured roofline on {mine[0]['hardware']['cpu']['model']} (dots: DGEMM n/12)"
    for r, line in zip(mine, draw_rooflines(ax, ceilings, title)):
        m = r["metrics"]
        points = sorted((int(k.rsplit("_n", 1)[1]), v) for k, v in m.items() if k.startswith("gflops_fp64_n"))
        # GEMM of order n moves at least 3 n^2 doubles for 2 n^3 flops: intensity n/12 flop/byte.
        ax.plot([n / 12 for n, _ in points], [v for _, v in points], "o", color=line.get_color())
    return save_figure(fig, pathlib.Path(out_dir) / FIGURE_NAME, dpi=110)
