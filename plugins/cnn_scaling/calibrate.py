"""Measurements on this machine that calibrate and validate the model.

* Allreduce times over a message-size sweep through the profiled ``ctx.comm``; alpha and beta
  are fitted on the sizes up to a quarter of the largest, piecewise when a break point (where
  the MPI library switches protocol, e.g. eager to rendezvous) fits much better than one line,
  and the model is validated by extrapolation to the larger sizes.
* Node ceilings: fp32 GEMM GFLOP/s (numpy, n=1024) and copy bandwidth; then each GEMM of the
  small CNN (forward, backward-data, backward-weights) is timed with numpy at its real shape.
"""
from __future__ import annotations

import statistics
import time
from dataclasses import dataclass

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


def _fit_line(n: np.ndarray, t: np.ndarray) -> tuple[float, float, float]:
    """(alpha, beta, sum of squared relative residuals) of t = alpha + beta n, least squares on
    relative error so that 8-byte and 4-MiB messages weigh alike."""
    A = np.vstack([np.ones_like(n), n]).T / t[:, None]
    (alpha, beta), *_ = np.linalg.lstsq(A, np.ones_like(t), rcond=None)
    alpha, beta = max(alpha, 1e-9), max(beta, 1e-15)
    return alpha, beta, float((((alpha + beta * n) - t) / t) ** 2 @ np.ones_like(t))


@dataclass(frozen=True)
class AllreduceFit:
    """Recursive-doubling alpha/beta (beta absorbs gamma: one number per byte) below and, when a
    break point was found, above ``break_bytes``."""

    low: Network
    high: Network | None = None
    break_bytes: int | None = None

    def network(self, nbytes: float) -> Network:
        return self.high if self.high is not None and nbytes >= (self.break_bytes or 0) else self.low


MIN_SEGMENT = 3
PIECEWISE_GAIN = 0.5   # a break is kept only when it halves the squared relative residuals ...
LINE_GOOD_ENOUGH = 0.01  # ... of a line that misses by more than 1 % rms


def fit_network(points: list[tuple[int, float]], p: int) -> AllreduceFit:
    """One alpha-beta line, or two with the break point that fits best (see PIECEWISE_GAIN)."""
    lg = max(1, int(np.ceil(np.log2(p))))
    n = np.array([b for b, _ in points], dtype=float)
    t = np.array([s for _, s in points]) / lg
    alpha, beta, ssr = _fit_line(n, t)
    best = AllreduceFit(Network(alpha, beta))
    best_ssr = ssr
    if ssr / len(n) < LINE_GOOD_ENOUGH ** 2:
        return best
    for j in range(MIN_SEGMENT, len(n) - MIN_SEGMENT + 1):
        a1, b1, s1 = _fit_line(n[:j], t[:j])
        a2, b2, s2 = _fit_line(n[j:], t[j:])
        if s1 + s2 < PIECEWISE_GAIN * ssr and s1 + s2 < best_ssr:
            best, best_ssr = AllreduceFit(Network(a1, b1), Network(a2, b2), int(n[j])), s1 + s2
    return best


def validate_allreduce(points: list[tuple[int, float]], p: int, alpha: float = 0.0,
                       beta: float = 0.0) -> tuple[AllreduceFit, list[dict[str, float]]]:
    """Fit on the sizes up to a quarter of the largest, check by extrapolation on the rest; a
    non-zero ``alpha``/``beta`` replaces every fitted value (a control: a model that is wrong must
    show large residuals)."""
    limit = points[-1][0] / 4
    fit_pts = [pt for pt in points if pt[0] <= limit]
    check_pts = [pt for pt in points if pt[0] > limit]
    fit = fit_network(fit_pts, p)
    if alpha or beta:
        swap = lambda net: Network(alpha=alpha or net.alpha, beta=beta or net.beta)  # noqa: E731
        fit = AllreduceFit(swap(fit.low), swap(fit.high) if fit.high else None, fit.break_bytes)
    rows = []
    for nbytes, measured in check_pts:
        predicted = allreduce_time(nbytes, p, fit.network(nbytes), "recursive_doubling")
        rows.append({"bytes": nbytes, "measured_s": measured, "predicted_s": predicted,
                     "residual": (predicted - measured) / measured})
    return fit, rows


SMALL_MESSAGE = 64          # bytes: at 1 Gbit/s still under 1 us of wire time, so all latency


def pingpong_sweep(comm, sizes: list[int], reps: int, small_reps: int = 50) -> list[tuple[int, float]]:
    """(bytes, median one-way seconds) of a ping-pong between ranks 0 and 1, as OSU's latency test
    measures it (half the round trip); the other ranks wait. Every rank gets the result. Messages
    up to 64 KiB take ``small_reps`` round trips (they are cheap, and latency is noisy)."""
    rank = comm.Get_rank()
    out = []
    for nbytes in sizes:
        x = np.ones(max(1, nbytes // 4), dtype=np.float32)
        y = np.empty_like(x)
        times = []
        comm.Barrier()
        if rank < 2:
            other = 1 - rank
            for _ in range((small_reps if nbytes <= 65536 else reps) + 1):   # the first one is dropped
                t0 = time.perf_counter()
                if rank == 0:
                    comm.Send(x, dest=other)
                    comm.Recv(y, source=other)
                else:
                    comm.Recv(y, source=other)
                    comm.Send(x, dest=other)
                times.append((time.perf_counter() - t0) / 2)
        out.append((x.nbytes, statistics.median(times[1:]) if rank == 0 else 0.0))
    return comm.bcast(out, root=0)


def fit_link(points: list[tuple[int, float]]) -> tuple[float, float]:
    """(alpha s, beta s/byte) of the link, Hockney's way: alpha is the median one-way time of the
    messages up to SMALL_MESSAGE bytes (the smallest alone if none is that small), beta the
    least-squares slope over the largest quarter of the sizes (at least two), where the time is all
    bandwidth. The Allreduce fit above, by contrast, folds the MPI library's protocol
    round trips into its alpha (e.g. 1, 2 or 4 link crossings by message size on MPICH over TCP)."""
    n = np.array([b for b, _ in points], dtype=float)
    t = np.array([s for _, s in points])
    large = n >= min(n[-2], n[-1] / 4) if len(n) >= 2 else np.ones_like(n, dtype=bool)
    beta = float(np.polyfit(n[large], t[large], 1)[0]) if large.sum() >= 2 else float("nan")
    small = t[n <= SMALL_MESSAGE] if (n <= SMALL_MESSAGE).any() else t[:1]
    return float(np.median(small)), beta


def reduction_bandwidth(nbytes: int = 4 * 2**20) -> float:
    """Bytes of message reduced per second by an elementwise fp32 sum (np.add, out of cache):
    the inverse of the model's gamma on this machine."""
    a = np.ones(nbytes // 4, dtype=np.float32)
    b, c = a.copy(), np.empty_like(a)
    np.add(a, b, out=c)
    return nbytes / _best(lambda: np.add(a, b, out=c), 9)


SMALL_DIMS = (4, 8, 16, 32, 64, 128, 256)
LARGE_DIM = 1024


def gemm_rate(m: int, n: int, k: int, reps: int = 5) -> float:
    """Best-of-``reps`` FLOP/s of an fp32 m x n x k GEMM (numpy's BLAS)."""
    rng = np.random.default_rng(0)
    a = rng.standard_normal((m, k)).astype(np.float32)
    b = rng.standard_normal((k, n)).astype(np.float32)
    a @ b
    return 2.0 * m * n * k / _best(lambda: a @ b, reps)


def fit_half_length(dims: list[int], efficiency: list[float]) -> float:
    """The d_half of e(d) = d / (d + d_half) closest to the measured efficiencies (log squares)."""
    grid = np.geomspace(0.5, 2048.0, 400)
    d, e = np.asarray(dims, dtype=float), np.clip(np.asarray(efficiency), 1e-6, None)
    errors = [float(np.sum((np.log(d / (d + h)) - np.log(e)) ** 2)) for h in grid]
    return float(grid[int(np.argmin(errors))])


def measure_node(threads: int) -> tuple[Node, dict[str, list[float]]]:
    """Peak fp32 GEMM rate, streaming bandwidth and the small-dimension half-performance lengths,
    from a calibration sweep of shapes with one small dimension (never the layers it predicts).
    Returns the node and the sweep (rates by dimension) for the record."""
    big_n = LARGE_DIM
    rates = {dim: [gemm_rate(*[d if i == j else big_n for i in range(3)]) for d in SMALL_DIMS]
             for j, dim in enumerate("mnk")}
    square = gemm_rate(big_n, big_n, big_n)
    peak = max([square] + [r for rs in rates.values() for r in rs])
    halves = tuple(fit_half_length(list(SMALL_DIMS), [r / peak for r in rates[dim]]) for dim in "mnk")
    big = np.ones(256 * 2**20 // 4, dtype=np.float32)  # 256 MiB: far beyond the caches
    dst = np.empty_like(big)
    np.copyto(dst, big)
    tc = _best(lambda: np.copyto(dst, big), 5)
    node = Node(peak_flops=peak, bandwidth=2.0 * big.nbytes / tc, bytes_per_elem=4, half_dims=halves)
    return node, {f"gemm_sweep_gflops_small_{dim}": [r / 1e9 for r in rs] for dim, rs in rates.items()}


def validate_gemms(layers: list[Layer], batch: int, node: Node, reps: int) -> list[dict[str, float]]:
    """Predicted vs measured seconds of every GEMM of every layer at per-rank ``batch``."""
    rows = []
    for layer in layers:
        for kind, (m, n, k) in layer.gemms(batch).items():
            measured = 2.0 * m * n * k / gemm_rate(m, n, k, reps)
            predicted = gemm_time(m, n, k, node)
            rows.append({"layer": layer.name, "kernel": kind, "m": m, "n": n, "k": k,
                         "measured_s": measured, "predicted_s": predicted,
                         "residual": (predicted - measured) / measured})
    return rows


def weighted_residual(rows: list[dict[str, float]]) -> float:
    """Mean |residual| weighted by each GEMM's share of the measured time: what the error costs a
    prediction of the whole network (a tiny fc2 kernel 50 % off matters less than conv2 10 % off)."""
    total = sum(r["measured_s"] for r in rows)
    return sum(abs(r["residual"]) * r["measured_s"] for r in rows) / total
