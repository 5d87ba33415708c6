"""The reference's Gaussian mixture generator (DPMMSubClusters.jl ``generate_gaussian_data``):
pi ~ Dir(1_K), counts ~ Mult(N, pi), mu_k ~ N(0, var I), Sigma_k ~ InvWishart(D + 2, I);
deterministic from ``seed``. Rows are shuffled so that rank blocks are exchangeable."""
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


def _read(path: str, what: str) -> np.ndarray:
    import pathlib

    from harness.errors import UsageError

    p = pathlib.Path(path)
    if not p.is_file():
        raise UsageError(f"param {what}={path}: no such file (give a .npy or .csv file)")
    try:
        return np.load(p, allow_pickle=False) if p.suffix == ".npy" else np.loadtxt(p, delimiter=",", ndmin=2)
    except ValueError as exc:
        raise UsageError(f"param {what}={path}: cannot read it as a numeric matrix: {exc}") from None


def load_matrix(path: str, labels: str = "") -> tuple[np.ndarray, np.ndarray | None]:
    """A user's points (N x D) and optional labels (N), checked for shape and finiteness."""
    from harness.errors import UsageError

    x = _read(path, "data").astype(float)
    if x.ndim != 2 or len(x) < 2 or not np.isfinite(x).all():
        raise UsageError(f"param data={path}: need a finite N x D matrix with N >= 2, got shape {x.shape}")
    if not labels:
        return x, None
    y = _read(labels, "labels").ravel()
    if len(y) != len(x):
        raise UsageError(f"param labels={labels}: {len(y)} labels for {len(x)} points")
    return x, y
