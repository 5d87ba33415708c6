"""One repeat of psgd_svm: each rank trains Pegasos on its block of rows and the ranks average the
model with a profiled Allreduce every ``msf`` local samples (the reference PSGDSVMC algorithm)."""
from __future__ import annotations

import math
import time
from typing import Any

import numpy as np


TARGET_GAP = 0.01   # time to target: the primal objective within 1 % of the converged SVM's


def prepare(ctx) -> None:
    """Compile the kernel outside timing; the data are made per seed (one seed per repeat)."""
    from harness_plugins.psgd_svm.model import pegasos_block

    ctx.state.update(data=None, sequential_accuracy={})
    pegasos_block(np.zeros((1, 2)), np.ones(1), np.zeros(2), 0, 1, 1.0, 0.1)  # compile outside timing
    if ctx.params["algorithm"] == "parallel" and ctx.params["msf"] > 0:
        from harness_plugins.psgd_svm.model import parallel_epoch

        w, buf = np.zeros(2), np.zeros(2)   # the communication mode used, so compiled outside timing too
        parallel_epoch(np.zeros((1, 2)), np.ones(1), w, buf, 1, 1, 1.0, 0.1, 0, ctx.nranks,
                       ctx.params["comm"], np.zeros(3))


def repeat_seed(ctx) -> int:
    """Each measured repeat is its own seed (data, split, shards, start), the same seeds in every
    case of a sweep: replicates for the accuracy claims, paired across msf values."""
    return ctx.params["seed"] + max(ctx.repeat, 0)


def data_for(ctx, seed: int) -> dict[str, Any]:
    """The split, this rank's block of training rows and the converged SVM of ``seed`` (the last
    seed's kept, so a warm-up and the first repeat share them)."""
    from harness_plugins.psgd_svm.data import load, partition_order

    held = ctx.state["data"]
    if held is not None and held["seed"] == seed:
        return held
    p = ctx.params
    split = load(p["dataset"], p["n_samples"], seed, p["standardize"])
    n_local = len(split.y_train) // ctx.nranks  # the reference drops the remainder rows
    order = partition_order(split.y_train, p["partition"], seed)
    rows = order[ctx.rank * n_local:(ctx.rank + 1) * n_local]
    y_rows = -split.y_train[rows] if p["flip_labels"] else split.y_train[rows]
    held = {"seed": seed, "split": split, "x": np.ascontiguousarray(split.x_train[rows]),
            "y": np.ascontiguousarray(y_rows), "n_local": n_local,
            "reference": reference_svm(split, p["lam"])}
    ctx.state["data"] = held
    return held


def reference_svm(split, lam: float) -> dict[str, float]:
    """Test accuracy and primal objective of a converged linear SVM on the same objective:
    scikit-learn's LinearSVC with the hinge loss, C = 1/(lambda n) and no intercept (Pegasos
    minimises lambda/2 |w|^2 + mean hinge)."""
    import warnings

    from sklearn.exceptions import ConvergenceWarning
    from sklearn.svm import LinearSVC

    from harness_plugins.psgd_svm.model import objective

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        svm = LinearSVC(loss="hinge", C=1.0 / (lam * len(split.y_train)), fit_intercept=False,
                        dual=True, max_iter=20000).fit(split.x_train, split.y_train)
    return {"accuracy": float((svm.predict(split.x_test) == split.y_test).mean()),
            "objective": objective(svm.coef_[0], split.x_train, split.y_train, lam)}


def _start(ctx, seed: int, d: int) -> np.ndarray:
    """w_r ~ U(0,1)^d on each rank, averaged: the reference's common start."""
    w = np.random.default_rng(seed + 1000 * ctx.rank).random(d)
    if ctx.params["algorithm"] == "parallel":
        average(ctx, w, np.empty_like(w))
    return w


def average(ctx, w: np.ndarray, buf: np.ndarray) -> None:
    """The model average across ranks, in place (``buf`` a scratch array of w's shape)."""
    ctx.comm.Allreduce(w, buf)
    np.multiply(buf, 1.0 / ctx.nranks, out=w)


def compute_work(epochs: int, n_local: int, d: int, project: bool, full_objective: bool) -> tuple[float, float]:
    """(flops, bytes) of this rank's training, the kernel's own count: per sample 2d for the margin
    and 3d for the update (the margin-violated case; a met margin does d: an upper bound), 3d more
    with Pegasos's projection (norm and scale); per epoch the stopping rule's objective over the
    rank's rows (3d per row) or one sample's cost (4d). Bytes: each sample's row of x read once
    (8d), and once more by the full objective, the model staying in cache."""
    per_sample = (5 + (3 if project else 0)) * d
    per_epoch = n_local * per_sample + (3 * d * n_local if full_objective else 4 * d)
    return float(epochs * per_epoch), float(epochs * n_local * 8 * d * (2 if full_objective else 1))


def train_and_evaluate(ctx) -> dict[str, Any]:
    """One repeat: train to the stopping rule with model averaging every msf samples, then evaluate."""
    from harness_plugins.psgd_svm.model import (accuracy, block_sequential_epoch, cost, objective,
                                                  parallel_epoch, pegasos_block, sequential_train)

    p, s = ctx.params, ctx.state
    seed = repeat_seed(ctx)
    with ctx.phase("data"):
        data = data_for(ctx, seed)
    x, y, n_local, lam, msf = data["x"], data["y"], data["n_local"], p["lam"], p["msf"]
    nranks, algorithm = ctx.nranks, p["algorithm"]
    # comm=free (an ablation): no communication in the timed training at all; each rank stops by
    # its own objective, and the models are averaged once after the clock stops
    free = p["comm"] == "free" and msf != 0
    target = data["reference"]["objective"] * (1.0 + TARGET_GAP)
    to_target: tuple[int, float] | None = None
    calls0, bytes0, _ = ctx.comm.counters("Allreduce")
    with ctx.phase("compute"):
        w = _start(ctx, seed, x.shape[1])   # before the clock: its wait absorbs the ranks' skew at the start
    comm0 = ctx.comm.comm_seconds()
    t0 = time.perf_counter()
    with ctx.phase("compute"):
        below, epoch = 0, 0
        buf = np.empty_like(w)
        cost_in, cost_out = np.zeros(1), np.zeros(1)
        best = math.inf
        per_sample = p["schedule"] == "pegasos"
        while epoch < p["max_epochs"] and below < p["patience"]:
            epoch += 1
            eta = 1.0 / (lam * epoch)
            t_epoch = (epoch - 1) * n_local + 1 if per_sample else 0
            if algorithm == "parallel" and msf == 0:   # no averaging until the end (one-shot)
                pegasos_block(x, y, w, 0, n_local, eta, lam, t_epoch)
            elif algorithm == "parallel":
                with ctx.comm.calls_outside("Allreduce") as tally:
                    parallel_epoch(x, y, w, buf, n_local, msf, eta, lam, t_epoch, nranks, p["comm"], tally)
            elif algorithm == "sequential":
                pegasos_block(x, y, w, 0, n_local, eta, lam, t_epoch)
            else:
                t_blocks = (epoch - 1) * (n_local // msf) + 1 if per_sample else 0
                w = block_sequential_epoch(x, y, w, msf, eta, lam, t_blocks)
            if p["stop"] == "reference":
                cost_in[0] = cost(w, x[n_local - 1], y[n_local - 1], lam)
            else:
                cost_in[0] = objective(w, x, y, lam)
            if algorithm == "parallel" and not free:
                ctx.comm.Allreduce(cost_in, cost_out)
                cost_in[0] = cost_out[0] / nranks   # equal shards: the mean is the whole set's
            if p["stop"] == "reference":
                below = below + 1 if cost_in[0] < p["error_threshold"] else 0
            else:
                if to_target is None and msf != 0 and cost_in[0] <= target:   # one shared model
                    to_target = (epoch, time.perf_counter() - t0)
                if cost_in[0] < best * (1.0 - p["tolerance"]):
                    best, below = cost_in[0], 0
                else:
                    below += 1
        if algorithm == "parallel" and msf == 0:   # the one average, at the end
            average(ctx, w, buf)
    train_s = time.perf_counter() - t0
    comm_s = ctx.comm.comm_seconds() - comm0
    ctx.count_work("compute", *compute_work(epoch, n_local, x.shape[1], per_sample, p["stop"] != "reference"))
    if algorithm == "parallel" and free:   # the one average, after the (communication-free) training
        average(ctx, w, buf)
    calls1, bytes1, _ = ctx.comm.counters("Allreduce")

    with ctx.phase("eval"):
        split = data["split"]
        acc = accuracy(w, split.x_test, split.y_test)
        if (seed, epoch) not in s["sequential_accuracy"]:
            w0 = np.random.default_rng(seed).random(w.shape[0])
            w_seq = sequential_train(split.x_train[: n_local * nranks], split.y_train[: n_local * nranks],
                                     w0, epoch, lam, p["schedule"])
            s["sequential_accuracy"][(seed, epoch)] = accuracy(w_seq, split.x_test, split.y_test)
        seq_acc = s["sequential_accuracy"][(seed, epoch)]
        # the primal objective of the final (shared) model over all training rows (unprofiled;
        # equal shards: the mean of the ranks' objectives is the whole set's)
        final_objective = ctx.comm.raw.allreduce(objective(w, x, y, lam)) / nranks
        if to_target is None and msf == 0 and final_objective <= target:
            to_target = (epoch, train_s)
        # The model check is profiled like any traffic (2 Allreduce calls per repeat, after
        # the training window that allreduce_calls counts: 1 + epochs * (ceil(n_local/msf) + 1)).
        spread = 0.0
        if nranks > 1:
            hi, lo = np.empty_like(w), np.empty_like(w)
            from mpi4py import MPI
            ctx.comm.Allreduce(w, hi, op=MPI.MAX)
            ctx.comm.Allreduce(w, lo, op=MPI.MIN)
            spread = float((hi - lo).max())
    per_epoch_syncs = (1 if msf == 0 else 0 if free else
                       n_local + 1 if p["comm"] == "per_sample" else math.ceil(n_local / msf) + 1)
    per_epoch_syncs = per_epoch_syncs if algorithm == "parallel" else 0
    ctx.replicates("accuracy", {seed: acc})
    ctx.replicates("accuracy_gap", {seed: acc - seq_acc})
    ctx.replicates("accuracy_vs_reference", {seed: acc - data["reference"]["accuracy"]})
    ctx.replicates("final_objective", {seed: final_objective})
    return {
        "seed": seed,
        "partition": p["partition"],
        "accuracy": acc,
        "sequential_accuracy": seq_acc,
        "accuracy_gap": acc - seq_acc,
        "reference_accuracy": data["reference"]["accuracy"],
        "accuracy_vs_reference": acc - data["reference"]["accuracy"],
        "epochs": epoch,
        "final_cost": float(cost_in[0]),
        "final_objective": final_objective,
        "reference_objective": data["reference"]["objective"],
        "target_objective": target,
        "time_to_target_s": to_target[1] if to_target else None,
        "epochs_to_target": to_target[0] if to_target else None,
        "stopped_by_rule": bool(below >= p["patience"]),
        "train_s": train_s,
        "comm_s": comm_s,
        "compute_s": train_s - comm_s,
        "comm_fraction": comm_s / train_s if train_s > 0 else 0.0,
        "samples_per_s": n_local * nranks * epoch / train_s if train_s > 0 else 0.0,
        "allreduce_calls": calls1 - calls0,
        "allreduce_bytes": bytes1 - bytes0,
        # the measured cost of one synchronisation in the training window: msf=1's time is mostly
        # calls x this, so the speed-up over it tracks this machine's Allreduce latency (issue 54)
        "allreduce_us_per_call": 1e6 * comm_s / (calls1 - calls0) if calls1 > calls0 else None,
        "expected_allreduce_calls": ((1 + epoch * per_epoch_syncs + (msf == 0 or free))
                                     if algorithm == "parallel" else 0),
        "model_spread": spread,
        "n_train": n_local * nranks,
        "n_features": int(w.shape[0]),
        "synthetic": split.synthetic,
        "dataset": split.name,
    }
