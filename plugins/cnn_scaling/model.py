"""The performance model: roofline per GEMM at node level, alpha-beta-gamma collectives across nodes.

Node (docs/workloads/cnn_scaling.md; PyDTNN's performance model): a GEMM m x n x k does 2mnk flops over (mn + mk + nk) elements of memory
traffic; its time is flops / min(peak, bandwidth * intensity), i.e. the larger of the compute
and the memory time. im2col moves the column matrix once (memory only). A node may also know
how GEMM speed falls with a small dimension (Hockney's half-performance length, per dimension:
efficiency d / (d + d_half)); with those the compute rate is peak x e(m) x e(n) x e(k), so a
conv1 with inner dimension 27 is not predicted at the square-GEMM rate.

Network (Thakur, Rabenseifner, Gropp 2005), message of n bytes, p nodes, alpha = latency (s),
beta = s/byte, gamma = s/byte of reduction work:

    recursive doubling   log2(p) * (alpha + n beta + n gamma)
    Rabenseifner         2 log2(p) alpha + 2 (p-1)/p n beta + (p-1)/p n gamma
    ring                 2 (p-1) alpha + 2 (p-1)/p n beta + (p-1)/p n gamma
    binomial tree        2 log2(p) (alpha + n beta) + log2(p) n gamma   (reduce + broadcast)

log2(p) is rounded up. The cheapest algorithm is chosen per message size (``auto``).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from harness_plugins.cnn_scaling.layers import Layer

ALGORITHMS = ("recursive_doubling", "rabenseifner", "ring", "binomial")


@dataclass(frozen=True)
class Node:
    peak_flops: float       # FLOP/s
    bandwidth: float        # bytes/s (memory)
    bytes_per_elem: int = 4  # fp32 training
    half_dims: tuple[float, float, float] = (0.0, 0.0, 0.0)   # m, n, k half-performance lengths (0: none)

    def gemm_efficiency(self, m: int, n: int, k: int) -> float:
        """The fraction of peak a GEMM of this shape runs at (1 without half-performance lengths)."""
        e = 1.0
        for d, half in zip((m, n, k), self.half_dims):
            if half > 0:
                e *= d / (d + half)
        return e


@dataclass(frozen=True)
class Network:
    alpha: float            # s
    beta: float             # s per byte (1 / link bandwidth)
    gamma: float = 0.0      # s per byte reduced


def gemm_time(m: int, n: int, k: int, node: Node) -> float:
    flops = 2.0 * m * n * k
    traffic = node.bytes_per_elem * (m * n + m * k + n * k)
    return max(flops / (node.peak_flops * node.gemm_efficiency(m, n, k)), traffic / node.bandwidth)


def allreduce_time(nbytes: float, p: int, net: Network, algorithm: str) -> float:
    if p <= 1 or nbytes <= 0:
        return 0.0
    lg = math.ceil(math.log2(p))
    a, b, g = net.alpha, net.beta, net.gamma
    if algorithm == "recursive_doubling":
        return lg * (a + nbytes * b + nbytes * g)
    if algorithm == "rabenseifner":
        return 2 * lg * a + 2 * (p - 1) / p * nbytes * b + (p - 1) / p * nbytes * g
    if algorithm == "ring":
        return 2 * (p - 1) * a + 2 * (p - 1) / p * nbytes * b + (p - 1) / p * nbytes * g
    if algorithm == "binomial":
        return 2 * lg * (a + nbytes * b) + lg * nbytes * g
    raise ValueError(f"unknown allreduce algorithm {algorithm!r} (one of {', '.join(ALGORITHMS)}, auto)")


def best_allreduce(nbytes: float, p: int, net: Network) -> tuple[str, float]:
    """The cheapest algorithm for this message size and node count."""
    return min(((a, allreduce_time(nbytes, p, net, a)) for a in ALGORITHMS), key=lambda x: x[1])


def layer_times(layer: Layer, batch: int, node: Node, first: bool) -> dict[str, float]:
    """Forward, backward-data (not for the first layer) and backward-weights seconds of a layer."""
    g = layer.gemms(batch)
    out = {name: layer.groups * gemm_time(*mnk, node) for name, mnk in g.items()}
    if layer.kh * layer.kw > 1:  # im2col forward and col2im backward move the column matrix
        m, n, k = g["forward"]
        cols = layer.groups * k * n * node.bytes_per_elem
        out["forward"] += cols / node.bandwidth
        out["backward_data"] += cols / node.bandwidth
    if first:
        out["backward_data"] = 0.0
    return out


def iteration(layers: list[Layer], global_batch: int, p: int, node: Node, net: Network,
              algorithm: str = "auto", overlap: bool = False) -> dict[str, float]:
    """Predicted seconds of one data-parallel training iteration with ``global_batch`` over p nodes.

    Without overlap: compute (forward + backward at B/p) then one Allreduce per layer's
    gradients. With overlap: each layer's Allreduce starts when its backward pass is done and
    the network is free, while the backward pass of earlier layers goes on.
    """
    local = max(1, global_batch // p)
    times = [layer_times(l, local, node, i == 0) for i, l in enumerate(layers)]
    fwd = sum(t["forward"] for t in times)
    comm_each = []
    for layer in layers:
        nbytes = layer.params * node.bytes_per_elem
        comm_each.append(best_allreduce(nbytes, p, net)[1] if algorithm == "auto"
                         else allreduce_time(nbytes, p, net, algorithm))
    bwd = sum(t["backward_data"] + t["backward_weights"] for t in times)
    if not overlap:
        total = fwd + bwd + sum(comm_each)
    else:
        clock, net_free = fwd, fwd
        for t, c in zip(reversed(times), reversed(comm_each)):
            clock += t["backward_weights"]
            net_free = max(net_free, clock) + c  # gradient ready -> allreduce when the link is free
            clock += t["backward_data"]
        total = max(clock, net_free)
    return {"compute_s": fwd + bwd, "comm_s": sum(comm_each), "iteration_s": total}


def scaling(layers: list[Layer], global_batch: int, nodes: list[int], node: Node, net: Network,
            algorithm: str = "auto", overlap: bool = False) -> list[dict[str, float]]:
    """Speed-up and efficiency against node count for a fixed global batch (strong scaling)."""
    base = iteration(layers, global_batch, 1, node, net, algorithm, overlap)["iteration_s"]
    out = []
    for p in nodes:
        it = iteration(layers, global_batch, p, node, net, algorithm, overlap)
        speedup = base / it["iteration_s"]
        out.append({"nodes": p, **it, "speedup": speedup, "efficiency": speedup / p})
    return out
