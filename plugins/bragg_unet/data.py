"""Simulated neutron single-crystal diffraction peaks in 3D reciprocal-space boxes.

A documented simplification of the strong-peak profile (Ikeda-Carpenter time-of-flight profile
times a Gaussian), with the variability a real detector gives:

- shape: an anisotropic 3-D Gaussian core (three widths, each ``sigma`` x U(1 - aniso, 1 + aniso))
  under a random 3-D rotation, convolved along the TOF axis (axis 0) with an exponential tail of
  length ``tau`` x U(0.8, 1.2) (the moderator's emission time);
- position: the centre anywhere within +-``centre_jitter`` voxels of the box centre (4 by default:
  a peak-finder is needed, a fixed mask is not enough);
- intensity I log-uniform in [i_min, i_max] (weak peaks are common);
- background: b ~ U(b_min, b_max) counts/voxel with a linear gradient of up to ``gradient`` x b
  across the box in a random direction;
- satellites: with probability ``satellite_p`` a second, weaker reflection (``satellite_ratio``
  of I, U(0.05, 0.3)) 4-7 voxels away, which is not part of the peak: a mask or integration must
  leave it out;
- Poisson counting noise on the sum.

Ground truth: the smallest set of voxels holding ``mask_fraction`` of the main peak's expected
counts, and I itself. An "instrument" (dataset) is the set of parameters; transfer learning uses
two of them. Everything is drawn from ``numpy.random.default_rng(seed)``.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Instrument:
    sigma: float = 1.4          # Gaussian width (voxels) of the core
    aniso: float = 0.35         # each axis's width x U(1 - aniso, 1 + aniso)
    tau: float = 2.0            # exponential tail along TOF (voxels)
    centre_jitter: float = 4.0  # the centre within +- this many voxels of the box centre
    i_min: float = 20.0
    i_max: float = 2000.0
    b_min: float = 0.2
    b_max: float = 1.0
    gradient: float = 0.6       # background change across the box, as a fraction of b
    satellite_p: float = 0.3    # probability of a neighbouring weaker reflection
    mask_fraction: float = 0.9


INSTRUMENTS = {"A": Instrument(), "B": Instrument(sigma=1.1, tau=3.5, aniso=0.45)}


def _rotation(rng: np.random.Generator) -> np.ndarray:
    """A uniformly random 3-D rotation (QR of a Gaussian matrix, signs fixed)."""
    q, r = np.linalg.qr(rng.standard_normal((3, 3)))
    q *= np.sign(np.diag(r))
    return q if np.linalg.det(q) > 0 else -q


def _peak(size: int, centre: np.ndarray, sigma: float, aniso: float, tau: float,
          rng: np.random.Generator) -> np.ndarray:
    """One peak's expected-count shape (sums to 1 over the box)."""
    g = np.arange(size, dtype=float)
    grid = np.stack(np.meshgrid(g, g, g, indexing="ij"), axis=-1) - centre
    widths = sigma * rng.uniform(1 - aniso, 1 + aniso, 3)
    local = grid @ _rotation(rng)
    core = np.exp(-0.5 * ((local / widths) ** 2).sum(axis=-1))
    t = tau * rng.uniform(0.8, 1.2)
    kernel = np.exp(-np.arange(size) / t)
    shape = np.zeros_like(core)
    for k, w in enumerate(kernel):   # the TOF tail: the core convolved along axis 0
        shape[k:] += w * core[:size - k]
    return shape / shape.sum()


def _mask(shape: np.ndarray, fraction: float) -> np.ndarray:
    flat = np.sort(shape.ravel())[::-1]
    cut = flat[np.searchsorted(np.cumsum(flat), fraction)]
    return shape >= cut


def _background(size: int, level: float, gradient: float, rng: np.random.Generator) -> np.ndarray:
    g = np.arange(size, dtype=float) - (size - 1) / 2
    direction = rng.standard_normal(3)
    direction /= np.linalg.norm(direction)
    ramp = sum(d * a for d, a in zip(direction, np.meshgrid(g, g, g, indexing="ij"))) / size
    return level * (1 + rng.uniform(0, gradient) * ramp)


def simulate(n: int, size: int, inst: Instrument, seed: int | list[int]) -> dict[str, np.ndarray]:
    """n boxes: counts (n, size, size, size), mask (bool), intensity (n), background (n)."""
    rng = np.random.default_rng(seed)
    counts = np.empty((n, size, size, size), dtype=np.float32)
    mask = np.empty((n, size, size, size), dtype=bool)
    intensity = np.exp(rng.uniform(np.log(inst.i_min), np.log(inst.i_max), n))
    background = rng.uniform(inst.b_min, inst.b_max, n)
    satellites = np.zeros(n, dtype=bool)
    middle = (size - 1) / 2
    for i in range(n):
        centre = middle + rng.uniform(-inst.centre_jitter, inst.centre_jitter, 3)
        shape = _peak(size, centre, inst.sigma, inst.aniso, inst.tau, rng)
        expected = intensity[i] * shape + _background(size, background[i], inst.gradient, rng)
        if rng.random() < inst.satellite_p:
            satellites[i] = True
            offset = rng.standard_normal(3)
            offset *= rng.uniform(4, 7) / np.linalg.norm(offset)
            other = _peak(size, centre + offset, inst.sigma, inst.aniso, inst.tau, rng)
            expected += rng.uniform(0.05, 0.3) * intensity[i] * other
        counts[i] = rng.poisson(expected)
        mask[i] = _mask(shape, inst.mask_fraction)
    return {"counts": counts, "mask": mask, "intensity": intensity, "background": background,
            "satellite": satellites}


def features(counts: np.ndarray) -> np.ndarray:
    """Network input: log1p counts, standardised per box, with a channel axis."""
    x = np.log1p(counts)
    mean = x.mean(axis=(1, 2, 3), keepdims=True)
    std = x.std(axis=(1, 2, 3), keepdims=True) + 1e-6
    return ((x - mean) / std)[:, None].astype(np.float32)
