"""Zero-skill and classical comparators that every bragg_unet case scores next to the U-Net.

A learned mask is only worth something above what needs no learning from the box's voxels:

* ``mean``: the training boxes' mean truth mask, thresholded (the threshold that maximises the
  training Dice); it never looks at the test box.
* ``template``: the same mean mask built from training masks re-centred on their box's smoothed
  maximum, then placed on each test box's smoothed maximum: a peak-finder plus a fixed shape.
* ``sphere``: the classical spherical peak-minus-background integration, its radius fitted on the
  training boxes (the one with the smallest mean relative intensity error).

All are numpy, deterministic, and use only training data to fit.
"""
from __future__ import annotations

import numpy as np

from harness_plugins.bragg_unet.model import dice_per_box

THRESHOLDS = np.linspace(0.1, 0.9, 17)
RADII = np.arange(2.0, 7.01, 0.5)


def smoothed_peak(counts: np.ndarray) -> tuple[int, int, int]:
    """The voxel of the box's maximum after a 3x3x3 box filter (robust to single-voxel noise)."""
    padded = np.pad(counts.astype(np.float64), 1, mode="edge")
    size = counts.shape
    acc = np.zeros(size)
    for a in range(3):
        for b in range(3):
            for c in range(3):
                acc += padded[a:a + size[0], b:b + size[1], c:c + size[2]]
    return tuple(int(i) for i in np.unravel_index(np.argmax(acc), size))


def _shift(volume: np.ndarray, offset: tuple[int, ...], fill: float = 0.0) -> np.ndarray:
    """``volume`` moved by ``offset`` voxels; what leaves the box is dropped, what enters is ``fill``."""
    out = np.full_like(volume, fill)
    src, dst = [], []
    for o, n in zip(offset, volume.shape):
        src.append(slice(max(0, -o), min(n, n - o)))
        dst.append(slice(max(0, o), min(n, n + o)))
    out[tuple(dst)] = volume[tuple(src)]
    return out


def _best_threshold(prob: np.ndarray, masks: np.ndarray, place) -> float:
    scores = [dice_per_box(np.stack([place(prob >= t, i) for i in range(len(masks))]), masks).mean()
              for t in THRESHOLDS]
    return float(THRESHOLDS[int(np.argmax(scores))])


class MaskControls:
    """Fitted on training boxes; ``masks(counts)`` gives each control's masks for new boxes."""

    def __init__(self, counts: np.ndarray, masks: np.ndarray) -> None:
        centre = tuple(s // 2 for s in masks.shape[1:])
        self.mean_prob = masks.mean(axis=0)
        peaks = [smoothed_peak(c) for c in counts]
        centred = np.stack([_shift(m.astype(np.float64), tuple(c - p for c, p in zip(centre, pk)))
                            for m, pk in zip(masks, peaks)])
        self.template_prob = centred.mean(axis=0)
        self.centre = centre
        self.mean_threshold = _best_threshold(self.mean_prob, masks, lambda m, i: m)
        self.template_threshold = _best_threshold(
            self.template_prob, masks, lambda m, i: self._place(m, peaks[i]))

    def _place(self, mask: np.ndarray, peak: tuple[int, int, int]) -> np.ndarray:
        return _shift(mask, tuple(p - c for p, c in zip(peak, self.centre)), False)

    def masks(self, counts: np.ndarray) -> dict[str, np.ndarray]:
        mean = self.mean_prob >= self.mean_threshold
        template = self.template_prob >= self.template_threshold
        return {"mean": np.broadcast_to(mean, counts.shape).copy(),
                "template": np.stack([self._place(template, smoothed_peak(c)) for c in counts])}


def fit_sphere_radius(counts: np.ndarray, intensity: np.ndarray) -> float:
    """The sphere radius with the smallest mean relative error on training boxes."""
    from harness_plugins.bragg_unet.integrate import relative_errors

    errors = [relative_errors(counts, None, intensity, sphere=True, radius=r)[0].mean() for r in RADII]
    return float(RADII[int(np.argmin(errors))])
