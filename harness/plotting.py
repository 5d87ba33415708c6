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
    return plt


def save_figure(fig: Any, path: pathlib.Path | str, dpi: int = 100) -> pathlib.Path:
    """Lay out, write and close ``fig``; returns the path written."""
    path = pathlib.Path(path)
    fig.tight_layout()
    fig.savefig(path, dpi=dpi)
    pyplot().close(fig)
    return path
