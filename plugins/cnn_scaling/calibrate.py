"""Measurements on this machine that calibrate and validate the model.

* Allreduce times over a message-size sweep through the profiled ``ctx.comm``; alpha and beta
  are fitted on every other size and the model is validated on the sizes left out.
* Node ceilings: fp32 GEMM GFLOP/s (numpy, n=1024) and copy bandwidth; then each GEMM of the
  small CNN (forward, backward-data, backward-weights) is timed with numpy at its real shape.
"""
from __future__ import annotations

import statistics
import time

import numpy as np

from harness_plugins.cnn_scaling.layers import Layer
from harness_plugins.cnn_scaling.model import Network, Node, allreduce_time, gemm_time


def _best(fn, reps: int) -> float:
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def allreduce_sweep(comm, sizes: list[int], reps: int) -> list[tuple[int, float]]:
    """(bytes, median seconds) per message size; every rank takes part."""
    out = []
    for nbytes in sizes:
        x = np.ones(max(1, nbytes // 4), dtype=np.float32)
        y = np.empty_like(x)
        comm.Barrier()
        times = []
        for _ in range(reps):
            t0 = time.perf_counter()
            comm.Allreduce(x, y)
            times.append(time.perf_counter() - t0)
        local = np.array([statistics.median(times)])
        slowest = np.empty(1)
        comm.Allreduce(local, slowest, op=_max())
        out.append((x.nbytes, float(slowest[0])))
    return out


def _max():
    from mpi4py import MPI
    return MPI.MAX


def fit_network(points: list[tuple[int, float]], p: int) -> Network:
    """Alpha and beta for recursive doubling (beta absorbs gamma: one number per byte), fitted by
    least squares on relative error, so 8-byte and 4-MiB messages weigh alike."""
    lg = max(1, int(np.ceil(np.log2(p))))
    n = np.array([b for b, _ in points], dtype=float)
    t = np.array([s for _, s in points]) / lg
    A = np.vstack([np.ones_like(n), n]).T / t[:, None]
    (alpha, beta), *_ = np.linalg.lstsq(A, np.ones_like(t), rcond=None)
    return Network(alpha=max(alpha, 1e-9), beta=max(beta, 1e-15))


def validate_allreduce(points: list[tuple[int, float]], p: int,
                       alpha: float = 0.0, beta: float = 0.0) -> tuple[Network, list[dict[str, float]]]:
    """Fit on every other size, check on the rest; a non-zero ``alpha``/``beta`` replaces the fitted
    value (a control: a model that is wrong must show large residuals)."""
    fit_pts, check_pts = points[0::2], points[1::2]
    net = fit_network(fit_pts, p)
    net = Network(alpha=alpha or net.alpha, beta=beta or net.beta)
    rows = []
    for nbytes, measured in check_pts:
        predicted = allreduce_time(nbytes, p, net, "recursive_doubling")
        rows.append({"bytes": nbytes, "measured_s": measured, "predicted_s": predicted,
                     "residual": (predicted - measured) / measured})
    return net, rows


def measure_node(threads: int) -> Node:
    n = 1024
    a = np.random.default_rng(0).standard_normal((n, n)).astype(np.float32)
    b = a.copy()
    a @ b
    t = _best(lambda: a @ b, 5)
    big = np.ones(256 * 2**20 // 4, dtype=np.float32)  # 256 MiB: far beyond the caches
    dst = np.empty_like(big)
    np.copyto(dst, big)
    tc = _best(lambda: np.copyto(dst, big), 5)
    return Node(peak_flops=2.0 * n**3 / t, bandwidth=2.0 * big.nbytes / tc, bytes_per_elem=4)


def validate_gemms(layers: list[Layer], batch: int, node: Node, reps: int) -> list[dict[str, float]]:
    """Predicted vs measured seconds of every GEMM of every layer at per-rank ``batch``."""
    rng = np.random.default_rng(1)
    rows = []
    for layer in layers:
        for kind, (m, n, k) in layer.gemms(batch).items():
            a = rng.standard_normal((m, k)).astype(np.float32)
            b = rng.standard_normal((k, n)).astype(np.float32)
            a @ b
            measured = _best(lambda: a @ b, reps)
            predicted = gemm_time(m, n, k, node)
            rows.append({"layer": layer.name, "kernel": kind, "m": m, "n": n, "k": k,
                         "measured_s": measured, "predicted_s": predicted,
                         "residual": (predicted - measured) / measured})
    return rows
