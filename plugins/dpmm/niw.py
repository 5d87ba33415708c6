"""Normal-Inverse-Wishart conjugacy: sufficient statistics, posterior, marginal likelihood, sampling.

Prior (m0, kappa0, nu0, Psi0). For N points with S1 = sum x and S2 = sum x x^T:
    kappa_N = kappa0 + N,  nu_N = nu0 + N,  m_N = (kappa0 m0 + S1) / kappa_N,
    Psi_N = Psi0 + S2 + kappa0 m0 m0^T - kappa_N m_N m_N^T
    log m(X) = -N D/2 log(pi) + log Gamma_D(nu_N/2) - log Gamma_D(nu0/2)
               + nu0/2 log|Psi0| - nu_N/2 log|Psi_N| + D/2 (log kappa0 - log kappa_N)
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.special import multigammaln


@dataclass(frozen=True)
class NIW:
    m: np.ndarray
    kappa: float
    nu: float
    psi: np.ndarray

    @staticmethod
    def default(d: int) -> NIW:
        """The reference's prior: m = 0, kappa = 1, nu = D + 3, Psi = I."""
        return NIW(np.zeros(d), 1.0, d + 3.0, np.eye(d))

    @staticmethod
    def empirical(x: np.ndarray, alpha: float) -> NIW:
        """A prior scaled to the data (Fraley & Raftery's default for Bayesian Gaussian mixtures):
        m = the data mean, kappa = 0.01, nu = D + 2, and Psi such that the prior's covariance scale
        is the data covariance over K^(2/D), K = alpha log(1 + N/alpha), the number of clusters the
        DP prior expects for N points: each cluster's share of the data's volume."""
        n, d = x.shape
        k = max(1.0, alpha * np.log1p(n / alpha))
        cov = np.atleast_2d(np.cov(x, rowvar=False)) + 1e-9 * np.eye(d)
        return NIW(x.mean(axis=0), 0.01, d + 2.0, cov / k ** (2.0 / d))

    def posterior(self, n: float, s1: np.ndarray, s2: np.ndarray) -> NIW:
        kappa = self.kappa + n
        nu = self.nu + n
        m = (self.kappa * self.m + s1) / kappa
        psi = self.psi + s2 + self.kappa * np.outer(self.m, self.m) - kappa * np.outer(m, m)
        return NIW(m, kappa, nu, (psi + psi.T) / 2)

    def log_marginal(self, n: float, s1: np.ndarray, s2: np.ndarray) -> float:
        d = self.m.shape[0]
        post = self.posterior(n, s1, s2)
        _, logdet0 = np.linalg.slogdet(self.psi)
        _, logdet_n = np.linalg.slogdet(post.psi)
        return float(-0.5 * n * d * np.log(np.pi) + multigammaln(post.nu / 2, d) - multigammaln(self.nu / 2, d)
                     + 0.5 * self.nu * logdet0 - 0.5 * post.nu * logdet_n
                     + 0.5 * d * (np.log(self.kappa) - np.log(post.kappa)))

    def sample(self, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        """(mu, Sigma) ~ NIW: Sigma ~ InvWishart(nu, Psi), mu ~ N(m, Sigma / kappa)."""
        from scipy.stats import invwishart

        sigma = np.atleast_2d(invwishart.rvs(df=self.nu, scale=self.psi, random_state=rng))
        mu = rng.multivariate_normal(self.m, sigma / self.kappa)
        return mu, sigma


def stats_of(x: np.ndarray) -> tuple[float, np.ndarray, np.ndarray]:
    return float(len(x)), x.sum(axis=0), x.T @ x


def gaussian_loglik(x: np.ndarray, mu: np.ndarray, sigma: np.ndarray) -> np.ndarray:
    """log N(x_i; mu, Sigma) for every row, with one Cholesky and one triangular solve (BLAS)."""
    from scipy.linalg import solve_triangular

    chol = np.linalg.cholesky(sigma)
    z = solve_triangular(chol, (x - mu).T, lower=True)
    d = x.shape[1]
    return -0.5 * (z * z).sum(axis=0) - np.log(np.diag(chol)).sum() - 0.5 * d * np.log(2 * np.pi)
