"""One box: central slices of the noisy counts, the true mask and the predicted mask."""
from __future__ import annotations

import pathlib

import numpy as np


def box_figure(counts: np.ndarray, truth: np.ndarray, pred: np.ndarray, path: pathlib.Path) -> None:
    from harness import pyplot, save_figure

    plt = pyplot()

    c = counts.shape[0] // 2
    fig, axes = plt.subplots(3, 3, figsize=(8, 8))
    for row, (vol, title) in enumerate(((counts, "counts"), (truth, "true mask"), (pred, "U-Net mask"))):
        for col, (sl, axis) in enumerate(((vol[c], "TOF slice"), (vol[:, c], "y slice"), (vol[:, :, c], "x slice"))):
            axes[row, col].imshow(sl, cmap="viridis" if row == 0 else "gray")
            axes[row, col].set_title(f"{title}, {axis}", fontsize=8)
            axes[row, col].axis("off")
    save_figure(fig, path, dpi=90)
