"""Split and merge Metropolis-Hastings ratios of the sub-cluster sampler (Chang & Fisher 2013),
as DPMMSubClusters.jl computes them (docs/workloads/dpmm.md)."""
from __future__ import annotations

from scipy.special import gammaln
import numpy as np


def log_h_split(alpha: float, n_l: float, n_r: float, logm_l: float, logm_r: float, logm: float) -> float:
    """log H = log a + lgamma(N_l) + log m(x_l) + lgamma(N_r) + log m(x_r) - lgamma(N) - log m(x)."""
    if n_l <= 0 or n_r <= 0:
        return -np.inf
    return float(np.log(alpha) + gammaln(n_l) + logm_l + gammaln(n_r) + logm_r - gammaln(n_l + n_r) - logm)


def log_h_merge(alpha: float, n_l: float, n_r: float, logm_l: float, logm_r: float, logm: float) -> float:
    """log H = -log a + lgamma(a) - 2 lgamma(a/2) + lgamma(N) - lgamma(N + a)
    + lgamma(N_l + a/2) - lgamma(N_l) + lgamma(N_r + a/2) - lgamma(N_r) + log m(x) - log m(x_l) - log m(x_r)."""
    n = n_l + n_r
    return float(-np.log(alpha) + gammaln(alpha) - 2 * gammaln(alpha / 2) + gammaln(n) - gammaln(n + alpha)
                 + gammaln(n_l + alpha / 2) - gammaln(n_l) + gammaln(n_r + alpha / 2) - gammaln(n_r)
                 + logm - logm_l - logm_r)
