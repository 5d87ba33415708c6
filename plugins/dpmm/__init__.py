"""Workload dpmm: distributed sub-cluster split/merge MCMC for Dirichlet-process Gaussian mixtures.

Dinari, Yu, Freifeld, Fisher, "Distributed MCMC Inference in Dirichlet Process Mixture Models
Using Julia", HPML 2019 (DPMMSubClusters.jl; SPECS.md section 2). Rank 0 samples parameters and
broadcasts them (``ctx.comm.bcast``); every rank holds a data shard with labels and sends back
only sufficient statistics (``ctx.comm.Allreduce``). One repeat = one full chain of
``iterations`` from a single cluster.
"""
from __future__ import annotations

import time
import zlib
from typing import Any

import numpy as np

from harness import Claim, Param, Workload, hookimpl

PAPER = "Dinari, Yu, Freifeld, Fisher. Distributed MCMC Inference in DPMMs Using Julia. HPML 2019"


class Dpmm(Workload):
    name = "dpmm"
    paper = PAPER
    description = "Chang-Fisher sub-cluster split/merge sampler, NIW-Gaussian, master/worker over MPI"
    frameworks = ("numpy", "mpi")
    requires = ("scipy", "sklearn")
    params = {
        "n": Param(int, default=20000, minimum=10, help="points (generated)"),
        "d": Param(int, default=2, minimum=1, maximum=256, help="dimensions"),
        "k_true": Param(int, default=6, minimum=1, maximum=100, help="generated components"),
        "var": Param(float, default=100.0, minimum=0.0, help="variance of the component means"),
        "alpha": Param(float, default=10.0, minimum=1e-6),
        "iterations": Param(int, default=100, minimum=1),
        "burnout": Param(int, default=20, minimum=1),
        "seed": Param(int, default=0, minimum=0),
        "nmi_curve": Param(bool, default=True, help="gather labels each iteration for the NMI curve "
                                                     "(evaluation traffic, through the unprofiled communicator)"),
        "baseline": Param(bool, default=True, help="also fit scikit-learn's BayesianGaussianMixture (rank 0)"),
    }
    sizes = {"smoke": {"n": 2000, "iterations": 30, "burnout": 5},
             "small": {"n": 20000, "iterations": 100, "burnout": 10},
             "paper": {"n": 1000000, "d": 16, "k_true": 10, "burnout": 20, "nmi_curve": False}}
    default_size = "small"
    default_ranks = 2
    claims = [
        Claim("k_error", "<=", 1, paper_value="K recovered", source="SPECS 2.6: true K within +-1"),
        Claim("nmi", ">=", 0.9, paper_value=">= 0.9", source="SPECS 2.6: NMI >= 0.9 within 100 iterations"),
    ]

    def setup(self, ctx) -> None:
        from harness_plugins.dpmm.data import generate

        p = ctx.params
        x, y = generate(p["n"], p["d"], p["k_true"], p["var"], p["seed"])
        rows = np.array_split(np.arange(p["n"]), ctx.nranks)[ctx.rank]
        ctx.state.update(x=x[rows], y_local=y[rows], y=y if ctx.is_root else None)
        if ctx.is_root and p["baseline"]:
            ctx.state["baseline"] = self._baseline(x, y, p)

    @staticmethod
    def _baseline(x: np.ndarray, y: np.ndarray, p: dict[str, Any]) -> dict[str, float]:
        """scikit-learn's variational DP mixture on the same data: what a user would try instead."""
        import warnings

        from sklearn.exceptions import ConvergenceWarning
        from sklearn.metrics import normalized_mutual_info_score
        from sklearn.mixture import BayesianGaussianMixture

        t0 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            bgm = BayesianGaussianMixture(n_components=max(20, 2 * p["k_true"]), random_state=p["seed"],
                                          weight_concentration_prior_type="dirichlet_process",
                                          max_iter=200).fit(x)
        labels = bgm.predict(x)
        return {"bgmm_seconds": time.perf_counter() - t0,
                "bgmm_nmi": float(normalized_mutual_info_score(y, labels)),
                "bgmm_k": int(len(np.unique(labels)))}

    def run(self, ctx) -> dict[str, Any]:
        from sklearn.metrics import normalized_mutual_info_score

        from harness_plugins.dpmm.niw import NIW
        from harness_plugins.dpmm.sampler import (Master, Settings, apply_moves, local_stats, next_ages,
                                                  propose_moves, sample_labels, sample_model)

        p, st, comm = ctx.params, ctx.state, ctx.comm
        cfg = Settings(alpha=p["alpha"], iterations=p["iterations"], burnout=p["burnout"])
        x = st["x"]
        rng = np.random.default_rng([p["seed"], ctx.rank, ctx.repeat + 1000 * ctx.warmup])
        master = Master(NIW.default(x.shape[1]), np.random.default_rng([p["seed"], 999]), burnout=cfg.burnout)
        k, z, s = 1, np.zeros(len(x), dtype=np.int64), rng.integers(0, 2, len(x))
        nmi_curve, k_curve, iter_s, bytes_per_iter = [], [], [], []
        agree = True
        loglik = 0.0
        for it in range(cfg.iterations):
            t_it = time.perf_counter()
            bytes0 = sum(comm.counters(op)[1] for op in ("Allreduce", "bcast"))
            with ctx.phase("local"):
                stats = local_stats(x, z, s, k)
            total = np.empty_like(stats)
            comm.Allreduce(stats, total)
            with ctx.phase("master"):
                model = sample_model(total, master, cfg.alpha) if ctx.is_root else None
            model = comm.bcast(model, root=0)
            hard = it >= cfg.iterations - cfg.argmax_stop
            with ctx.phase("local"):
                z, s, ll_local = sample_labels(x, model, rng, hard)
                stats = local_stats(x, z, s, k)
            comm.Allreduce(stats, total)
            allow = it < cfg.iterations - cfg.split_stop
            with ctx.phase("master"):
                moves = propose_moves(total, master, cfg.alpha, allow) if ctx.is_root else None
            moves = comm.bcast(moves, root=0)
            with ctx.phase("local"):
                z, s, k_new, remap = apply_moves(z, s, moves, k, rng)
                if ctx.is_root:
                    master.ages = next_ages(master.ages, moves, remap)
                k = k_new
            bytes_per_iter.append(sum(comm.counters(op)[1] for op in ("Allreduce", "bcast")) - bytes0)
            iter_s.append(time.perf_counter() - t_it)
            with ctx.phase("eval"):  # evaluation only: unprofiled, not part of the algorithm's traffic
                raw = comm.raw
                loglik = raw.allreduce(ll_local)
                digests = raw.allgather(zlib.crc32(model["mu"].tobytes() + model["sigma"].tobytes()
                                                   + repr(moves).encode()))
                agree &= len(set(digests)) == 1
                if p["nmi_curve"] or it == cfg.iterations - 1:
                    labels = raw.gather(z, root=0)
                    if ctx.is_root:
                        # shards are contiguous row blocks in rank order, so the gathered labels line up with y
                        nmi_curve.append(float(normalized_mutual_info_score(st["y"], np.concatenate(labels))))
                k_curve.append(k)
        metrics: dict[str, Any] = {
            "k_found": k, "k_true": p["k_true"], "k_error": abs(k - p["k_true"]),
            "nmi": nmi_curve[-1] if nmi_curve else None, "nmi_curve": nmi_curve, "k_curve": k_curve,
            "loglik": loglik, "iteration_s": float(np.mean(iter_s)),
            "comm_bytes_per_iteration": float(np.median(bytes_per_iter)),
            "models_identical_on_all_ranks": agree, "n": p["n"], "d": p["d"],
        }
        metrics.update(st.get("baseline", {}))
        return metrics


@hookimpl
def harness_workloads() -> list[Workload]:
    return [Dpmm()]


@hookimpl
def harness_run_finished(records: list[dict[str, Any]], out_dir) -> None:
    from harness_plugins.dpmm.plot import plot_dpmm

    plot_dpmm(records, out_dir)
