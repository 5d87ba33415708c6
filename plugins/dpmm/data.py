"""The reference's generators (DPMMSubClusters.jl ``data_generators.jl``), deterministic from ``seed``.

- ``generate`` (``generate_gaussian_data``): pi ~ Dir(1_K), counts ~ Mult(N, pi),
  mu_k ~ N(0, var I), Sigma_k ~ InvWishart(D + 2, I). Rows are shuffled so that rank blocks
  are exchangeable.
- ``generate_multinomial`` (``generate_mnmm_data``): labels uniform over K; cluster k's
  category probabilities ~ Dir(a) with a_d drawn from 1..20 and a_k from 30..100 (so every
  cluster has its own dominant category: needs K <= D); each point ~ Mult(trials, theta_z).
"""
from __future__ import annotations

import numpy as np


def generate(n: int, d: int, k: int, var: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    from scipy.stats import invwishart

    rng = np.random.default_rng(seed)
    pi = rng.dirichlet(np.ones(k))
    counts = rng.multinomial(n, pi)
    xs, ys = [], []
    for j, c in enumerate(counts):
        mu = rng.normal(0.0, np.sqrt(var), d)
        sigma = np.atleast_2d(invwishart.rvs(df=d + 2, scale=np.eye(d), random_state=rng))
        xs.append(rng.multivariate_normal(mu, sigma, size=c))
        ys.append(np.full(c, j))
    x, y = np.concatenate(xs), np.concatenate(ys)
    order = rng.permutation(n)
    return np.ascontiguousarray(x[order]), y[order]


def generate_multinomial(n: int, d: int, k: int, trials: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    if k > d:
        raise ValueError(f"the multinomial generator needs d >= k_true (got d={d}, k_true={k})")
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, k, n)
    theta = np.empty((k, d))
    for j in range(k):
        a = rng.integers(1, 21, d).astype(float)
        a[j] = rng.integers(30, 101)
        theta[j] = rng.dirichlet(a)
    x = np.empty((n, d))
    for j in range(k):
        idx = np.flatnonzero(labels == j)
        x[idx] = rng.multinomial(trials, theta[j], size=len(idx))
    return x, labels


def _read(path: str, what: str) -> np.ndarray:
    import pathlib

    from harness import UsageError

    p = pathlib.Path(path)
    if not p.is_file():
        raise UsageError(f"param {what}={path}: no such file (give a .npy or .csv file)")
    try:
        return np.load(p, allow_pickle=False) if p.suffix == ".npy" else np.loadtxt(p, delimiter=",", ndmin=2)
    except ValueError as exc:
        raise UsageError(f"param {what}={path}: cannot read it as a numeric matrix: {exc}") from None


def load_matrix(path: str, labels: str = "", counts: bool = False) -> tuple[np.ndarray, np.ndarray | None]:
    """A user's points (N x D) and optional labels (N), checked for shape and finiteness
    (and, for the multinomial likelihood, that every entry is a non-negative whole count)."""
    from harness import UsageError

    x = _read(path, "data").astype(float)
    if x.ndim != 2 or len(x) < 2 or not np.isfinite(x).all():
        raise UsageError(f"param data={path}: need a finite N x D matrix with N >= 2, got shape {x.shape}")
    if counts and ((x < 0).any() or (x != np.round(x)).any()):
        raise UsageError(f"param data={path}: likelihood=multinomial needs non-negative whole counts "
                         "(one row of category counts per point)")
    if not labels:
        return x, None
    y = _read(labels, "labels").ravel()
    if len(y) != len(x):
        raise UsageError(f"param labels={labels}: {len(y)} labels for {len(x)} points")
    return x, y
