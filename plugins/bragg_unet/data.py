"""Simulated neutron single-crystal diffraction peaks in 3D reciprocal-space boxes.

A documented simplification of the strong-peak profile (Ikeda-Carpenter time-of-flight profile
times a bivariate Gaussian): along the TOF axis (axis 0) the profile is an exponentially
modified Gaussian (a Gaussian rise convolved with an exponential decay of length ``tau``, the
moderator's tail), across it a bivariate Gaussian with a random rotation; widths jitter per peak.
Total counts I are log-uniform in [i_min, i_max] (so weak peaks are common), on a flat
background b ~ U(b_min, b_max) counts/voxel, then Poisson counting noise. Ground truth: the
smallest set of voxels holding ``mask_fraction`` of the peak's expected counts, and I itself.
An "instrument" (dataset) is the set of shape parameters; transfer learning uses two of them.
Everything is drawn from ``numpy.random.default_rng(seed)``.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Instrument:
    sigma: float = 1.4          # Gaussian width (voxels) across TOF
    sigma_tof: float = 1.0      # Gaussian rise along TOF
    tau: float = 2.0            # exponential tail along TOF (voxels)
    i_min: float = 20.0
    i_max: float = 2000.0
    b_min: float = 0.2
    b_max: float = 1.0
    mask_fraction: float = 0.9


INSTRUMENTS = {"A": Instrument(), "B": Instrument(sigma=1.1, sigma_tof=0.8, tau=3.5)}


def _profile(size: int, inst: Instrument, rng: np.random.Generator) -> np.ndarray:
    c = (size - 1) / 2 + rng.uniform(-1.5, 1.5, 3)
    g = np.arange(size, dtype=float)
    t, y, x = np.meshgrid(g - c[0], g - c[1], g - c[2], indexing="ij")
    theta = rng.uniform(0, np.pi)
    u = np.cos(theta) * y + np.sin(theta) * x
    v = -np.sin(theta) * y + np.cos(theta) * x
    su, sv = inst.sigma * rng.uniform(0.8, 1.3), inst.sigma * rng.uniform(0.8, 1.3)
    cross = np.exp(-0.5 * (u / su) ** 2 - 0.5 * (v / sv) ** 2)
    # exponentially modified Gaussian along TOF, on a fine grid then sampled
    tau = inst.tau * rng.uniform(0.8, 1.2)
    fine = np.linspace(-6, size, 8 * (size + 6))
    rise = np.exp(-0.5 * (fine / inst.sigma_tof) ** 2)
    kernel = np.exp(-np.clip(fine - fine[0], 0, None) / tau)
    emg = np.convolve(rise, kernel)[: len(fine)]
    along = np.interp(t, fine, emg / emg.max())
    shape = along * cross
    return shape / shape.sum()


def _mask(shape: np.ndarray, fraction: float) -> np.ndarray:
    flat = np.sort(shape.ravel())[::-1]
    cut = flat[np.searchsorted(np.cumsum(flat), fraction)]
    return shape >= cut


def simulate(n: int, size: int, inst: Instrument, seed: int) -> dict[str, np.ndarray]:
    """n boxes: counts (n, size, size, size), mask (bool), intensity (n), background (n)."""
    rng = np.random.default_rng(seed)
    counts = np.empty((n, size, size, size), dtype=np.float32)
    mask = np.empty((n, size, size, size), dtype=bool)
    intensity = np.exp(rng.uniform(np.log(inst.i_min), np.log(inst.i_max), n))
    background = rng.uniform(inst.b_min, inst.b_max, n)
    for i in range(n):
        shape = _profile(size, inst, rng)
        counts[i] = rng.poisson(intensity[i] * shape + background[i])
        mask[i] = _mask(shape, inst.mask_fraction)
    return {"counts": counts, "mask": mask, "intensity": intensity, "background": background}


def features(counts: np.ndarray) -> np.ndarray:
    """Network input: log1p counts, standardised per box, with a channel axis."""
    x = np.log1p(counts)
    mean = x.mean(axis=(1, 2, 3), keepdims=True)
    std = x.std(axis=(1, 2, 3), keepdims=True) + 1e-6
    return ((x - mean) / std)[:, None].astype(np.float32)
