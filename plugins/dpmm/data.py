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
