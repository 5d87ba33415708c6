"""Zero-skill and classical comparators that every bragg_unet case scores next to the U-Net.

A learned mask is only worth something above what needs no learning from the box's voxels:

* ``mean``: the training boxes' mean truth mask, thresholded (the threshold that maximises the
  training Dice); it never looks at the test box.
* ``template``: the same mean mask built from training masks re-centred on their box's smoothed
  maximum, then placed on each test box's smoothed maximum: a peak-finder plus a fixed shape.
* ``sphere``: the classical spherical peak-minus-background integration, its radius fitted on the
  training boxes (the one with the smallest mean relative intensity error).

All are numpy, deterministic, and use only training data to fit. Which comparator a margin
is taken against is chosen on validation boxes before any test box is seen
(:func:`choose_comparators`), never on the test boxes the margin is measured on.
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


def gaussian_fit_intensities(counts: np.ndarray, half: int = 4) -> np.ndarray:
    """Profile fitting, the classical alternative to masks: per box, a 3-D Gaussian (amplitude,
    centre, three axis widths) on a linear background (level and gradient), fitted by weighted
    least squares (weights 1 / sqrt(counts + 1)) to the (2 half + 1)^3 voxels around the smoothed
    maximum; the intensity is the fitted Gaussian's counts inside the whole box. Needs no
    training data."""
    from scipy.optimize import least_squares

    size = counts.shape[1]
    g = np.arange(size, dtype=float)
    whole = np.stack(np.meshgrid(g, g, g, indexing="ij")).reshape(3, -1)
    out = np.empty(len(counts))
    for i, box in enumerate(counts):
        top = smoothed_peak(box)
        lo = [min(max(0, c - half), size - 2 * half - 1) for c in top]
        near = tuple(slice(a, a + 2 * half + 1) for a in lo)
        y = box[near].ravel().astype(np.float64)
        grid = np.stack(np.meshgrid(*(g[s] for s in near), indexing="ij")).reshape(3, -1)
        ramp = (grid - np.array(top, dtype=float)[:, None]) / size
        w = 1.0 / np.sqrt(y + 1.0)
        level = float(np.median(y))

        def peak(q: np.ndarray, at: np.ndarray) -> np.ndarray:
            d = (at - q[1:4, None]) / np.exp(q[4:7, None])
            return np.exp(q[0]) * np.exp(-0.5 * (d ** 2).sum(axis=0))

        def residual(q: np.ndarray) -> np.ndarray:
            return (peak(q, grid) + q[7] * (1 + q[8:11] @ ramp) - y) * w

        def jacobian(q: np.ndarray) -> np.ndarray:
            s = np.exp(q[4:7, None])
            d = (grid - q[1:4, None]) / s
            f = np.exp(q[0]) * np.exp(-0.5 * (d ** 2).sum(axis=0))
            return np.column_stack([f, *(f * d / s), *(f * d ** 2), 1 + q[8:11] @ ramp, *(q[7] * ramp)]) * w[:, None]

        start = np.array([np.log(max(1.0, y.max() - level)), *top, 0.4, 0.4, 0.4, min(level, y.max()), 0, 0, 0])
        lower = [-5, -2, -2, -2, np.log(0.3), np.log(0.3), np.log(0.3), 0, -20, -20, -20]
        upper = [15, size + 1, size + 1, size + 1, np.log(size), np.log(size), np.log(size), y.max() + 1, 20, 20, 20]
        try:
            fit = least_squares(residual, np.clip(start, lower, upper), bounds=(lower, upper), jac=jacobian,
                                max_nfev=60)
            out[i] = float(peak(fit.x, whole).sum())
        except (ValueError, np.linalg.LinAlgError):
            out[i] = 0.0
    return out


def comparator_scores(comparators: MaskControls, sphere_radius: float, boxes: dict[str, np.ndarray],
                      fraction: float) -> tuple[dict[str, float], dict[str, float]]:
    """(Dice per mask comparator, mean relative intensity error on the weak half of the peaks per
    comparator, the profile fit included) on ``boxes``: what a margin is taken against."""
    from harness_plugins.bragg_unet.integrate import relative_errors

    counts, intensity = boxes["counts"], boxes["intensity"]
    weak = intensity < np.median(intensity)
    masks = comparators.masks(counts)
    dice = {name: float(dice_per_box(m, boxes["mask"]).mean()) for name, m in masks.items()}
    errors = {name: float(relative_errors(counts, m, intensity, False, fraction=fraction)[0][weak].mean())
              for name, m in masks.items()}
    errors["sphere"] = float(relative_errors(counts, None, intensity, True, radius=sphere_radius)[0][weak].mean())
    fit = np.abs(gaussian_fit_intensities(counts) - intensity) / intensity
    errors["profile_fit"] = float(fit[weak].mean())
    return dice, errors


def choose_comparators(dice: dict[str, float], weak_errors: dict[str, float]) -> tuple[str, str]:
    """(the mask with the best Dice, the comparator with the smallest weak-peak error), as scored
    on validation boxes: fixed before the run's test boxes are drawn."""
    return max(dice, key=dice.get), min(weak_errors, key=weak_errors.get)
