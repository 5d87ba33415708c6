"""Peak integration: from a mask (U-Net) or a sphere (the classical baseline), minus background.

Both estimate the background per voxel from the voxels outside the peak region (for the sphere:
a shell), subtract it over the region, and give sigma from Poisson statistics:
sigma^2 = counts in region + n_region^2 * var(background estimate).
"""
from __future__ import annotations

import numpy as np


def integrate(counts: np.ndarray, region: np.ndarray, bg_region: np.ndarray) -> tuple[float, float]:
    n_in, n_bg = region.sum(), bg_region.sum()
    if n_in == 0 or n_bg == 0:
        return 0.0, float("inf")
    bg = counts[bg_region].mean()
    total = counts[region].sum()
    value = total - n_in * bg
    sigma = np.sqrt(total + n_in**2 * bg / n_bg)
    return float(value), float(sigma)


def sphere_regions(size: int, radius: float, shell: tuple[float, float]) -> tuple[np.ndarray, np.ndarray]:
    g = np.arange(size) - (size - 1) / 2
    r = np.sqrt(sum(a**2 for a in np.meshgrid(g, g, g, indexing="ij")))
    return r <= radius, (r > shell[0]) & (r <= shell[1])


def relative_errors(counts: np.ndarray, regions: np.ndarray | None, truth: np.ndarray, sphere: bool,
                    radius: float = 3.5, fraction: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    """Per box: |I_est - I| / I and I_est / sigma. A mask region is drawn to hold ``fraction`` of
    the peak (the labelling's mask fraction), so its integral is divided by it to estimate I."""
    size = counts.shape[1]
    if sphere:
        inner, shell = sphere_regions(size, radius, (radius + 1.0, size / 2))
    errs, snr = [], []
    for i in range(len(counts)):
        region, bg = (inner, shell) if sphere else (regions[i], ~regions[i])
        value, sigma = integrate(counts[i], region, bg)
        if not sphere:
            value, sigma = value / fraction, sigma / fraction
        errs.append(abs(value - truth[i]) / truth[i])
        snr.append(value / sigma if np.isfinite(sigma) and sigma > 0 else 0.0)
    return np.array(errs), np.array(snr)
