"""Matplotlib without a screen, for the harness and for plugins: one place that picks the Agg
backend and that writes and closes a figure (a leaked figure per case adds up over a suite)."""
from __future__ import annotations

import pathlib
from typing import Any


def pyplot() -> Any:
    """``matplotlib.pyplot`` on the non-interactive Agg backend (imported only when plotting)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    # Labels come from records (params, paths): "$" is a dollar sign, not mathtext to parse.
    plt.rcParams["text.parse_math"] = False
    return plt


def plain_log_ticks(ax: Any) -> None:
    """Tick labels as plain numbers ("0.1", "100") on log axes: the default ones are mathtext,
    which ``pyplot()`` turns off for record text, and would print as "$\\mathdefault{10^{2}}$"."""
    from matplotlib.ticker import FuncFormatter, NullFormatter

    for axis, scale in ((ax.xaxis, ax.get_xscale()), (ax.yaxis, ax.get_yscale())):
        if scale == "log":
            axis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
            axis.set_minor_formatter(NullFormatter())


def save_figure(fig: Any, path: pathlib.Path | str, dpi: int = 100) -> pathlib.Path:
    """Lay out, write (whole or not at all) and close ``fig``; returns the path written."""
    from harness.output.atomic import write_atomic

    path = pathlib.Path(path)
    try:
        fig.tight_layout()
        write_atomic(path, lambda f: fig.savefig(f, dpi=dpi, format=path.suffix.lstrip(".") or "png"))
    finally:
        pyplot().close(fig)
    return path


def draw_rooflines(ax: Any, ceilings: list[tuple[str, float, float]], title: str) -> list[Any]:
    """min(peak GFLOP/s, intensity x GB/s) per (label, peak, bandwidth) on log axes; returns the lines
    (so a caller can add measured points in the same colour)."""
    import numpy as np

    ai = np.logspace(-2, 3, 200)
    lines = [ax.plot(ai, np.minimum(peak, ai * bw), label=label)[0] for label, peak, bw in ceilings]
    ax.set_xscale("log")
    ax.set_yscale("log")
    plain_log_ticks(ax)
    ax.set_xlabel("arithmetic intensity (flop/byte)")
    ax.set_ylabel("fp64 GFLOP/s")
    ax.set_title(title)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)
    return lines
