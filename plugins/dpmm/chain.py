"""One chain of the distributed sampler, shared by the clustering and the image-patch applications."""
from __future__ import annotations

import pickle
import time
import zlib
from typing import Any

import numpy as np

from harness_plugins.dpmm.families import family
from harness_plugins.dpmm.sampler import (Master, Settings, advance, apply_moves, local_stats,
                                          propose_moves, sample_labels, sample_model)


def run_chain(ctx, x: np.ndarray, p: dict[str, Any], truth: np.ndarray | None,
              evaluate_nmi: bool = True, prior: Any = None) -> dict[str, Any]:
    """Run ``p["iterations"]`` from one cluster on this rank's shard ``x``. With ``evaluate_nmi``
    (the same on every rank) labels are gathered and scored against ``truth`` (held by rank 0,
    all points in rank order). Returns metrics, this rank's final labels and the final model."""
    from sklearn.metrics import normalized_mutual_info_score

    comm = ctx.comm
    cfg = Settings(alpha=p["alpha"], iterations=p["iterations"], burnout=p["burnout"])
    copies = ctx.nranks if p.get("replicate") else 1   # replicated data: each rank's stats are the whole's
    stream = 0 if copies > 1 else ctx.rank               # ... and its labels the same draws
    rng = np.random.default_rng([p["seed"], stream, ctx.repeat + 1000 * ctx.warmup])
    fam = family(p.get("likelihood", "gaussian"), x.shape[1], prior)
    master = Master(fam, np.random.default_rng([p["seed"], 999]), burnout=cfg.burnout,
                    split_rule=p.get("split_rule", "loglik"), split_test=p.get("split_test", "hastings"))
    k, z, s = 1, np.zeros(len(x), dtype=np.int64), rng.integers(0, 2, len(x))
    nmi_curve, k_curve, iter_s, bytes_per_iter = [], [], [], []
    traffic = ("Allreduce", "bcast", "Gather")
    ship_labels = p.get("ship") == "labels"
    if ship_labels:   # shards may differ by a row: every rank sends the largest shard's width
        width = 2 * max(comm.raw.allgather(len(x)))
        outgoing = np.full(width, -1, dtype=np.int64)
        gathered = np.empty(width * ctx.nranks, dtype=np.int64) if ctx.is_root else None
    agree = True
    loglik = 0.0
    loglik_flops, stats_flops = fam.row_flops()
    work = 0.0   # the local phase's flops: K cluster and 2 sub-cluster likelihoods and 2 statistics per row
    for it in range(cfg.iterations):
        t_it = time.perf_counter()
        k_before = k
        bytes0 = sum(comm.counters(op)[1] for op in traffic)
        with ctx.phase("local"):
            stats = local_stats(x, z, s, k, fam)
        total = np.empty_like(stats)
        comm.Allreduce(stats, total)
        total /= copies
        with ctx.phase("master"):
            model = sample_model(total, master, cfg.alpha) if ctx.is_root else None
        model = comm.bcast(model, root=0)
        hard = it >= cfg.iterations - cfg.argmax_stop
        work += len(x) * ((len(model["log_w"]) + 2) * loglik_flops + 2 * stats_flops)
        with ctx.phase("local"):
            z, s, ll_local = sample_labels(x, model, rng, hard, fam)
            stats = local_stats(x, z, s, k, fam)
        comm.Allreduce(stats, total)
        total /= copies
        if ship_labels:   # the control's design: the master also keeps every point's labels
            outgoing[:len(z)], outgoing[len(z):2 * len(z)] = z, s
            comm.Gather(outgoing, gathered, root=0)
        allow = it < cfg.iterations - cfg.split_stop
        with ctx.phase("master"):
            moves = propose_moves(total, master, cfg.alpha, allow) if ctx.is_root else None
        moves = comm.bcast(moves, root=0)
        with ctx.phase("local"):
            z, s, k_new, remap = apply_moves(z, s, moves, k, rng)
            if ctx.is_root:
                advance(master, moves, remap)
            k = k_new
        bytes_per_iter.append((k_before, sum(comm.counters(op)[1] for op in traffic) - bytes0))
        iter_s.append(time.perf_counter() - t_it)
        with ctx.phase("eval"):  # evaluation only: unprofiled, not part of the algorithm's traffic
            raw = comm.raw
            loglik = raw.allreduce(ll_local) / copies
            digests = raw.allgather(zlib.crc32(pickle.dumps((model["theta"], model["sub_theta"]))
                                               + repr(moves).encode()))
            agree &= len(set(digests)) == 1
            if evaluate_nmi and (p["nmi_curve"] or it == cfg.iterations - 1):
                labels = raw.gather(z, root=0)
                if ctx.is_root:
                    labels = labels[:1] if copies > 1 else labels
                    # shards are contiguous row blocks in rank order, so the gathered labels line up with y
                    nmi_curve.append(float(normalized_mutual_info_score(truth, np.concatenate(labels))))
            k_curve.append(k)
    metrics = {
        "k_found": k, "k_max": max(k_curve) if k_curve else k, "nmi": nmi_curve[-1] if nmi_curve else None, "nmi_curve": nmi_curve, "k_curve": k_curve,
        "loglik": loglik, "iteration_s": float(np.mean(iter_s)),
        # at fixed K: a chain's K path differs with its draws (and so between rank counts), and an
        # iteration's work grows with K; these compare the same work on any rank count
        **fixed_k_seconds(iter_s, [kk for kk, _ in bytes_per_iter], p.get("k_true"),
                          sampled=cfg.iterations - cfg.argmax_stop),
        "comm_bytes_per_iteration": float(np.median([b for _, b in bytes_per_iter])),
        # every chain starts at one cluster and stays there for its burn-out: the traffic of those
        # iterations is what travels at equal model size, so only what grows with N can differ
        "comm_bytes_per_iteration_k1": float(np.median([b for kk, b in bytes_per_iter if kk == 1]))
        if any(kk == 1 for kk, _ in bytes_per_iter) else None,
        "models_identical_on_all_ranks": agree,
    }
    ctx.count_work("local", work, 8.0 * x.size * 4 * cfg.iterations)
    return {"metrics": metrics, "z": z, "model": model}


# a median of this many iterations at k_true is read directly (a line through noisier medians
# of briefly visited K is only needed where the chain spent less time there)
DIRECT_AT_K = 5


def fixed_k_seconds(iter_s: list[float], k_before: list[int], k_true: int | None,
                    sampled: int | None = None) -> dict[str, Any]:
    """Seconds per iteration at fixed K, the same work on any rank count.

    Only the first ``sampled`` iterations count: the chain's last ones assign labels by argmax,
    a quarter less work than a sampled iteration at the same K, and whether they fall at
    k_true or a cluster away differs from chain to chain. Per K the chain visited, the median
    of the iterations that began there (a median: a chain's first iterations also pay one-time
    costs, numba's compilation among them, ten times a later iteration's at N = 2e4).
    ``iteration_s_fixed_k``: that median at K = k_true where at least ``DIRECT_AT_K``
    iterations began there, else the straight line through the medians (weighted by their
    iterations; an iteration's work grows about linearly with K) read at k_true, so a chain that
    stopped a cluster short still gives a figure (``iteration_s_fixed_k_from`` says which);
    ``iteration_s_k1`` and ``iteration_s_k_true``: the medians at K = 1 (the burn-out) and at
    K = k_true (None where never visited)."""
    by_k: dict[int, list[float]] = {}
    for k, t in list(zip(k_before, iter_s))[:sampled]:
        by_k.setdefault(k, []).append(t)
    ks = sorted(by_k)
    medians = {k: float(np.median(by_k[k])) for k in ks}
    fitted = per_k = None
    source = "none: fewer than two K visited"
    if len(ks) >= 2 and k_true is not None:
        per_k, at_0 = np.polyfit(np.asarray(ks, dtype=float), np.asarray([medians[k] for k in ks]), 1,
                                 w=np.sqrt([len(by_k[k]) for k in ks]))
        fitted = float(at_0 + per_k * k_true)
        source = f"line through K={ks[0]}..{ks[-1]}"
    if k_true is not None and len(by_k.get(k_true, ())) >= DIRECT_AT_K:
        fitted, source = medians[k_true], f"median of {len(by_k[k_true])} iterations at K={k_true}"
    return {"iteration_s_fixed_k": fitted, "iteration_s_fixed_k_from": source,
            "iteration_s_per_cluster": None if per_k is None else float(per_k),
            "iteration_s_k1": medians.get(1), "iteration_s_k_true": medians.get(k_true) if k_true else None,
            "iteration_s_by_k": [f"K={k}: {medians[k] * 1e3:.2f} ms x {len(by_k[k])}" for k in ks]}
