"""Likelihood families of the sampler: what a sufficient-statistics row holds, the marginal
likelihood under the prior, posterior draws and per-point log-likelihoods.

Each family packs the statistics of one (cluster, sub-cluster) into one flat row, so the
reduction over ranks is a single Allreduce of a (K, 2, width) array whatever the family:
- ``gaussian``: Normal-Inverse-Wishart prior (niw.py); row = [N, sum x, sum x x^T], width 1+D+D^2.
- ``multinomial``: Dirichlet(beta) prior on the category probabilities of count vectors (as
  DPMMSubClusters.jl's multinomial prior); row = [N, sum of counts], width 1+D. The marginal
  likelihood leaves out the multinomial coefficients of the points: each point is on exactly
  one side of every split/merge ratio and of every label comparison, so they cancel.
"""
from __future__ import annotations

from typing import Any

import numpy as np
from scipy.special import gammaln

from harness_plugins.dpmm.niw import NIW, gaussian_loglik


class Gaussian:
    name = "gaussian"

    def __init__(self, d: int, prior: NIW | None = None) -> None:
        self.d = d
        self.prior = prior or NIW.default(d)
        self.width = 1 + d + d * d

    def stats(self, x: np.ndarray) -> np.ndarray:
        return np.concatenate([[len(x)], x.sum(axis=0), (x.T @ x).ravel()])

    def _unpack(self, row: np.ndarray) -> tuple[float, np.ndarray, np.ndarray]:
        d = self.d
        return row[0], row[1:1 + d], row[1 + d:].reshape(d, d)

    def log_marginal(self, row: np.ndarray) -> float:
        return self.prior.log_marginal(*self._unpack(row))

    def sample(self, row: np.ndarray, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        """(mu, Sigma) from the NIW posterior."""
        return self.prior.posterior(*self._unpack(row)).sample(rng)

    def loglik(self, x: np.ndarray, theta: Any) -> np.ndarray:
        return gaussian_loglik(x, *theta)

    def row_flops(self) -> tuple[float, float]:
        """(log-likelihood, statistics) flops per row: x - mu (d), the triangular solve (d^2), the
        squared norm (2d); the row's sum (d) and outer product (2d^2)."""
        d = self.d
        return float(d * d + 3 * d), float(2 * d * d + d)


class Multinomial:
    name = "multinomial"

    def __init__(self, d: int, beta: float = 1.0) -> None:
        self.d = d
        self.beta = np.full(d, beta)
        self.width = 1 + d

    def stats(self, x: np.ndarray) -> np.ndarray:
        return np.concatenate([[len(x)], x.sum(axis=0)])

    def log_marginal(self, row: np.ndarray) -> float:
        """log of the Dirichlet-multinomial evidence of the counts, without their coefficients:
        lgamma(sum b) - lgamma(sum b + sum c) + sum_d [lgamma(b_d + c_d) - lgamma(b_d)]."""
        counts = row[1:]
        b = self.beta
        return float(gammaln(b.sum()) - gammaln(b.sum() + counts.sum()) + (gammaln(b + counts) - gammaln(b)).sum())

    def sample(self, row: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """log theta, theta ~ Dir(beta + counts); floored so an unseen category is not -inf."""
        theta = rng.dirichlet(self.beta + row[1:])
        return np.log(np.maximum(theta, 1e-300))

    def loglik(self, x: np.ndarray, theta: Any) -> np.ndarray:
        """sum_d x_d log theta_d for every row: one BLAS matrix-vector product."""
        return x @ theta

    def row_flops(self) -> tuple[float, float]:
        """(log-likelihood, statistics) flops per row: a dot product (2d); the row's sum (d)."""
        return float(2 * self.d), float(self.d)


FAMILIES = {"gaussian": Gaussian, "multinomial": Multinomial}


def family(name: str, d: int, prior: NIW | None = None) -> Gaussian | Multinomial:
    """The likelihood family ``name``; ``prior`` replaces the Gaussian's default NIW."""
    return Gaussian(d, prior) if name == "gaussian" else FAMILIES[name](d)
