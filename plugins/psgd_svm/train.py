"""One repeat of psgd_svm: each rank trains Pegasos on its block of rows and the ranks average the
model with a profiled Allreduce every ``msf`` local samples (the reference PSGDSVMC algorithm)."""
from __future__ import annotations

import math
import time
from typing import Any

import numpy as np


def prepare(ctx) -> None:
    """Load the data, keep this rank's block of training rows, compile the kernel outside timing."""
    from harness_plugins.psgd_svm.data import load
    from harness_plugins.psgd_svm.model import pegasos_block

    p = ctx.params
    split = load(p["dataset"], p["n_samples"], p["seed"], p["standardize"])
    n_local = len(split.y_train) // ctx.nranks  # the reference drops the remainder rows
    rows = slice(ctx.rank * n_local, (ctx.rank + 1) * n_local)
    y_rows = -split.y_train[rows] if p["flip_labels"] else split.y_train[rows]
    ctx.state.update(split=split, x=np.ascontiguousarray(split.x_train[rows]),
                     y=np.ascontiguousarray(y_rows), n_local=n_local,
                     sequential_accuracy={})
    if ctx.is_root:
        ctx.state["reference"] = reference_accuracy(split, p["lam"])
    d = split.x_train.shape[1]
    pegasos_block(np.zeros((1, d)), np.ones(1), np.zeros(d), 0, 1, 1.0, 0.1)  # compile outside timing


def reference_accuracy(split, lam: float) -> float:
    """Test accuracy of a converged linear SVM on the same objective: scikit-learn's LinearSVC with
    the hinge loss, C = 1/(lambda n) and no intercept (Pegasos minimises lambda/2 |w|^2 + mean hinge)."""
    import warnings

    from sklearn.exceptions import ConvergenceWarning
    from sklearn.svm import LinearSVC

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        svm = LinearSVC(loss="hinge", C=1.0 / (lam * len(split.y_train)), fit_intercept=False,
                        dual=True, max_iter=20000).fit(split.x_train, split.y_train)
    return float((svm.predict(split.x_test) == split.y_test).mean())


def _start(ctx) -> np.ndarray:
    """w_r ~ U(0,1)^d on each rank, averaged: the reference's common start."""
    d = ctx.state["x"].shape[1]
    w = np.random.default_rng(ctx.params["seed"] + 1000 * ctx.rank).random(d)
    if ctx.params["algorithm"] == "parallel":
        avg = np.empty_like(w)
        ctx.comm.Allreduce(w, avg)
        w = avg / ctx.nranks
    return w


def train_and_evaluate(ctx) -> dict[str, Any]:
    """One repeat: train to the stopping rule with model averaging every msf samples, then evaluate."""
    from harness_plugins.psgd_svm.model import (accuracy, block_sequential_epoch, cost, objective,
                                                  pegasos_block, sequential_train)

    p, s = ctx.params, ctx.state
    x, y, n_local, lam, msf = s["x"], s["y"], s["n_local"], p["lam"], p["msf"]
    nranks, algorithm = ctx.nranks, p["algorithm"]
    calls0, bytes0, _ = ctx.comm.counters("Allreduce")
    comm0 = ctx.comm.comm_seconds()
    t0 = time.perf_counter()
    with ctx.phase("compute"):
        w = _start(ctx)
        below, epoch = 0, 0
        buf = np.empty_like(w)
        cost_in, cost_out = np.zeros(1), np.zeros(1)
        best = math.inf
        per_sample = p["schedule"] == "pegasos"
        while epoch < p["max_epochs"] and below < p["patience"]:
            epoch += 1
            eta = 1.0 / (lam * epoch)
            t_epoch = (epoch - 1) * n_local + 1 if per_sample else 0
            if algorithm == "parallel":
                for start in range(0, n_local, msf):
                    pegasos_block(x, y, w, start, min(start + msf, n_local), eta, lam,
                                  t_epoch + start if per_sample else 0)
                    ctx.comm.Allreduce(w, buf)
                    np.multiply(buf, 1.0 / nranks, out=w)
            elif algorithm == "sequential":
                pegasos_block(x, y, w, 0, n_local, eta, lam, t_epoch)
            else:
                t_blocks = (epoch - 1) * (n_local // msf) + 1 if per_sample else 0
                w = block_sequential_epoch(x, y, w, msf, eta, lam, t_blocks)
            if p["stop"] == "reference":
                cost_in[0] = cost(w, x[n_local - 1], y[n_local - 1], lam)
            else:
                cost_in[0] = objective(w, x, y, lam)
            if algorithm == "parallel":
                ctx.comm.Allreduce(cost_in, cost_out)
                cost_in[0] = cost_out[0] / nranks   # equal shards: the mean is the whole set's
            if p["stop"] == "reference":
                below = below + 1 if cost_in[0] < p["error_threshold"] else 0
            elif cost_in[0] < best * (1.0 - p["tolerance"]):
                best, below = cost_in[0], 0
            else:
                below += 1
    train_s = time.perf_counter() - t0
    comm_s = ctx.comm.comm_seconds() - comm0
    calls1, bytes1, _ = ctx.comm.counters("Allreduce")

    with ctx.phase("eval"):
        split = s["split"]
        acc = accuracy(w, split.x_test, split.y_test)
        if epoch not in s["sequential_accuracy"]:
            w0 = np.random.default_rng(p["seed"]).random(w.shape[0])
            w_seq = sequential_train(split.x_train[: n_local * nranks], split.y_train[: n_local * nranks],
                                     w0, epoch, lam, p["schedule"])
            s["sequential_accuracy"][epoch] = accuracy(w_seq, split.x_test, split.y_test)
        seq_acc = s["sequential_accuracy"][epoch]
        # The model check is profiled like any traffic (2 Allreduce calls per repeat, after
        # the training window that allreduce_calls counts: 1 + epochs * (ceil(n_local/msf) + 1)).
        spread = 0.0
        if nranks > 1:
            hi, lo = np.empty_like(w), np.empty_like(w)
            from mpi4py import MPI
            ctx.comm.Allreduce(w, hi, op=MPI.MAX)
            ctx.comm.Allreduce(w, lo, op=MPI.MIN)
            spread = float((hi - lo).max())
    per_epoch_syncs = math.ceil(n_local / msf) + 1 if algorithm == "parallel" else 0
    return {
        "accuracy": acc,
        "sequential_accuracy": seq_acc,
        "accuracy_gap": acc - seq_acc,
        "reference_accuracy": s.get("reference"),
        "accuracy_vs_reference": acc - s["reference"] if "reference" in s else None,
        "epochs": epoch,
        "final_cost": float(cost_in[0]),
        "stopped_by_rule": bool(below >= p["patience"]),
        "train_s": train_s,
        "comm_s": comm_s,
        "compute_s": train_s - comm_s,
        "comm_fraction": comm_s / train_s if train_s > 0 else 0.0,
        "samples_per_s": n_local * nranks * epoch / train_s if train_s > 0 else 0.0,
        "allreduce_calls": calls1 - calls0,
        "allreduce_bytes": bytes1 - bytes0,
        "expected_allreduce_calls": (1 + epoch * per_epoch_syncs) if algorithm == "parallel" else 0,
        "model_spread": spread,
        "n_train": n_local * nranks,
        "n_features": int(w.shape[0]),
        "synthetic": split.synthetic,
        "dataset": split.name,
    }
