"""The distributed sub-cluster split/merge sampler (Chang & Fisher 2013; DPMMSubClusters.jl).

Rank 0 (the master) samples cluster and sub-cluster parameters and weights and broadcasts
them; every rank holds its shard of the data with labels and sub-labels, samples them with
a restricted Gibbs step (vectorised: one BLAS call per cluster for all points), and only
sufficient statistics per cluster and sub-cluster (families.py: N, sum x, sum x x^T for the
Gaussian; N and count sums for the multinomial) are reduced: the bytes per iteration depend
on K and D, never on N. Rank 0 then proposes splits
(a cluster into its two sub-clusters) and merges (pairs), accepts them by the
Metropolis-Hastings ratios of ``moves.py``, and broadcasts the relabelling.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from harness_plugins.dpmm.families import Gaussian, Multinomial
from harness_plugins.dpmm.moves import log_h_merge, log_h_split

Family = Gaussian | Multinomial


@dataclass
class Settings:
    alpha: float = 10.0
    iterations: int = 100
    burnout: int = 20
    split_stop: int = 5
    argmax_stop: int = 5


@dataclass
class Master:
    """What only rank 0 keeps: the likelihood family with its prior, cluster ages, each cluster's
    recent sub-cluster log marginal likelihoods and whether it may split, and the master's
    random stream.

    ``split_rule="loglik"`` is DPMMSubClusters.jl's rule: a cluster becomes splittable once it has
    ``burnout`` sub-cluster log-likelihoods on record and their (slightly inflated) mean is no more
    than 0.01 below the latest one, i.e. its sub-clusters have settled; ``"age"`` only waits
    ``burnout`` iterations. ``split_test="accept"`` (a control) takes every proposed split
    without its Metropolis-Hastings test: the step that keeps the sampler from inventing clusters."""

    family: Family
    rng: np.random.Generator
    burnout: int = 20
    split_rule: str = "loglik"
    split_test: str = "hastings"
    ages: list[int] = field(default_factory=lambda: [0])
    history: list[list[float]] = field(default_factory=lambda: [[]])
    splittable: list[bool] = field(default_factory=lambda: [False])

    def observe(self, stats: np.ndarray) -> None:
        """Record this iteration's sub-cluster log marginal likelihood of every cluster and
        update which clusters may split."""
        logm = self.family.log_marginal
        for j in range(stats.shape[0]):
            hist = self.history[j]
            hist.append(logm(stats[j, 0]) + logm(stats[j, 1]))
            del hist[:-self.burnout]
            if self.split_rule == "age":
                self.splittable[j] = self.ages[j] >= self.burnout
            elif len(hist) == self.burnout and not self.splittable[j]:
                inflated_mean = sum(hist) / (self.burnout - 0.1)   # the reference's weighting
                self.splittable[j] = inflated_mean - hist[-1] < 1e-2


def local_stats(x: np.ndarray, z: np.ndarray, s: np.ndarray, k: int, fam: Family) -> np.ndarray:
    """(K, 2, width) sufficient statistics of this shard, one row per (cluster, side)."""
    out = np.zeros((k, 2, fam.width))
    group = 2 * z + s
    for g in range(2 * k):
        xg = x[group == g]
        if len(xg):
            out[g // 2, g % 2] = fam.stats(xg)
    return out


def sample_model(stats: np.ndarray, master: Master, alpha: float) -> dict[str, Any]:
    """Weights and (sub-)cluster parameters from the posterior given the reduced statistics."""
    k = stats.shape[0]
    rng, fam = master.rng, master.family
    n = stats[:, :, 0].sum(axis=1)
    weights = rng.dirichlet(np.append(n, alpha))[:k]
    model: dict[str, Any] = {"log_w": np.log(weights), "theta": [], "sub_log_w": np.zeros((k, 2)), "sub_theta": []}
    for j in range(k):
        model["theta"].append(fam.sample(stats[j, 0] + stats[j, 1], rng))
        model["sub_log_w"][j] = np.log(rng.dirichlet(stats[j, :, 0] + alpha / 2))
        model["sub_theta"].append([fam.sample(stats[j, side], rng) for side in (0, 1)])
    return model


def sample_labels(x: np.ndarray, model: dict[str, Any], rng: np.random.Generator,
                  hard: bool, fam: Family) -> tuple[np.ndarray, np.ndarray, float]:
    """Restricted Gibbs (no new clusters) for labels, then sub-labels; returns the shard's log-likelihood."""
    k = len(model["log_w"])
    ll = np.empty((len(x), k))
    for j in range(k):
        ll[:, j] = model["log_w"][j] + fam.loglik(x, model["theta"][j])
    noise = 0.0 if hard else rng.gumbel(size=ll.shape)
    z = np.argmax(ll + noise, axis=1)
    loglik = float(ll[np.arange(len(x)), z].sum())
    s = np.zeros(len(x), dtype=np.int64)
    for j in range(k):
        idx = np.flatnonzero(z == j)
        if not len(idx):
            continue
        sub = np.stack([model["sub_log_w"][j, side] + fam.loglik(x[idx], model["sub_theta"][j][side])
                        for side in (0, 1)], axis=1)
        s[idx] = np.argmax(sub + (0.0 if hard else rng.gumbel(size=sub.shape)), axis=1)
    return z, s, loglik


def propose_moves(stats: np.ndarray, master: Master, alpha: float, allow: bool) -> dict[str, Any]:
    """Rank 0: accepted splits and merges, as a relabelling every rank applies identically."""
    k = stats.shape[0]
    rng = master.rng
    logm = master.family.log_marginal
    splits, merges, reset = [], [], []
    empty = [j for j in range(k) if stats[j, :, 0].sum() == 0]
    for j in range(k):
        if j in empty:
            continue
        if stats[j, 0, 0] == 0 or stats[j, 1, 0] == 0:
            reset.append(j)  # a "bad" sub-cluster: re-draw its sub-labels
    master.observe(stats)
    if allow:
        for j in range(k):
            if not master.splittable[j] or j in reset or j in empty:
                continue
            h = log_h_split(alpha, stats[j, 0, 0], stats[j, 1, 0], logm(stats[j, 0]), logm(stats[j, 1]),
                            logm(stats[j, 0] + stats[j, 1]))
            if h > np.log(rng.random()) or master.split_test == "accept":
                splits.append(j)
        taken = set(splits)
        for a in range(k):
            for b in range(a + 1, k):
                if {a, b} & (taken | set(empty)) or min(master.ages[a], master.ages[b]) < master.burnout:
                    continue
                sa, sb = stats[a, 0] + stats[a, 1], stats[b, 0] + stats[b, 1]
                h = log_h_merge(alpha, sa[0], sb[0], logm(sa), logm(sb), logm(sa + sb))
                if h > np.log(rng.random()):
                    merges.append((a, b))
                    taken |= {a, b}
    return {"splits": splits, "merges": merges, "reset": reset, "empty": empty}


def apply_moves(z: np.ndarray, s: np.ndarray, moves: dict[str, Any], k: int,
                rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, int, np.ndarray]:
    """Relabel a shard: a split sends sub-cluster r to a new label; a merge joins b into a
    (a's points become sub l, b's sub r); empty labels are compacted. Returns (z, s, K, old->new)."""
    z, s = z.copy(), s.copy()
    new = k
    for j in moves["splits"]:
        right = (z == j) & (s == 1)
        z[right] = new
        for lab in (j, new):
            idx = z == lab
            s[idx] = rng.integers(0, 2, idx.sum())
        new += 1
    for a, b in moves["merges"]:
        s[z == a] = 0
        s[z == b] = 1
        z[z == b] = a
    for j in moves["reset"]:
        idx = z == j
        s[idx] = rng.integers(0, 2, idx.sum())
    merged_away = {b for _, b in moves["merges"]} | set(moves.get("empty", []))
    keep = [j for j in range(new) if j not in merged_away]
    remap = np.full(new, -1)
    remap[keep] = np.arange(len(keep))
    return remap[z], s, len(keep), remap


def next_ages(ages: list[int], moves: dict[str, Any], remap: np.ndarray) -> list[int]:
    """Cluster ages after the moves: +1 for untouched clusters, 0 for split and merged ones."""
    return [0 if age is None else age + 1 for age in _carry(ages, moves, remap)]


def _carry(values: list[Any], moves: dict[str, Any], remap: np.ndarray) -> list[Any]:
    """Per-cluster ``values`` after the moves: None for split, merged and new clusters."""
    fresh = set(moves["splits"]) | {a for a, _ in moves["merges"]}
    extended = [None if j in fresh else v for j, v in enumerate(values)]
    extended += [None] * (len(remap) - len(values))  # the new halves of splits
    out: list[Any] = [None] * int(remap.max() + 1)
    for old, new in enumerate(remap):
        if new >= 0:
            out[new] = extended[old]
    return out


def advance(master: Master, moves: dict[str, Any], remap: np.ndarray) -> None:
    """The master's per-cluster state after the moves (split and merged clusters start afresh)."""
    master.history = [[] if h is None else h for h in _carry(master.history, moves, remap)]
    master.splittable = [bool(v) for v in _carry(master.splittable, moves, remap)]
    master.ages = next_ages(master.ages, moves, remap)
