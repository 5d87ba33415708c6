"""Data-parallel training of the small CNN with torch, gradients averaged through ``ctx.comm``.

The network is the ``small_cnn`` layer table: conv3x3(3->32)+ReLU+pool, conv3x3(32->64)+ReLU+pool,
fc(4096->128)+ReLU, fc(128->10), on generated 32x32x3 images with 10 classes (a fixed random
teacher labels them; documented, seeded). One iteration = forward, backward, one Allreduce of
the flattened gradients (numpy view, profiled), SGD step.
"""
from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numpy as np

QUIET_POLL_S = 0.002   # how often a waiting rank wakes to test its barrier


def build(seed: int):
    import torch
    from torch import nn

    torch.manual_seed(seed)
    return nn.Sequential(
        nn.Conv2d(3, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(64 * 8 * 8, 128), nn.ReLU(), nn.Linear(128, 10))


def data(n: int, seed: int):
    import torch

    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 3, 32, 32, generator=g)
    teacher = torch.randn(3 * 32 * 32, 10, generator=g)
    y = (x.flatten(1) @ teacher).argmax(1)
    return x, y


_STEP_FLOPS: dict[int, int] = {}


def step_flops(batch: int) -> int:
    """Floating-point operations of one training step (forward and backward) of :func:`build`'s
    network on ``batch`` images, as torch's flop counter counts them; counted once per batch size."""
    if batch not in _STEP_FLOPS:
        import torch

        from harness import torch_flops

        model = build(0)
        x, y = torch.zeros(batch, 3, 32, 32), torch.zeros(batch, dtype=torch.long)
        _STEP_FLOPS[batch] = torch_flops(lambda: torch.nn.functional.cross_entropy(model(x), y).backward())
    return _STEP_FLOPS[batch]


def iterations(ctx, per_rank_batch: int, steps: int, use_comm: bool, seed: int = 0) -> dict[str, float]:
    """Median compute and comm seconds per iteration over ``steps`` (after one warmup step)."""
    import torch

    torch.set_num_threads(max(1, ctx.threads))
    model = build(seed)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x, y = data(per_rank_batch * max(1, ctx.nranks if use_comm else 1), seed + 1)
    lo = (ctx.rank if use_comm else 0) * per_rank_batch
    xb, yb = x[lo:lo + per_rank_batch], y[lo:lo + per_rank_batch]
    params = list(model.parameters())
    flat = np.empty(sum(p.numel() for p in params), dtype=np.float32)
    out = np.empty_like(flat)
    compute, comm = [], []
    for step in range(steps + 1):
        t0 = time.perf_counter()
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(xb), yb)
        loss.backward()
        t1 = time.perf_counter()
        if use_comm:
            i = 0
            for p in params:
                flat[i:i + p.numel()] = p.grad.numpy().ravel()
                i += p.numel()
            ctx.comm.Allreduce(flat, out)
            out /= ctx.nranks
            i = 0
            for p in params:
                p.grad.copy_(torch.from_numpy(out[i:i + p.numel()]).view_as(p.grad))
                i += p.numel()
        t2 = time.perf_counter()
        opt.step()
        t3 = time.perf_counter()
        if step:
            compute.append((t1 - t0) + (t3 - t2))
            comm.append(t2 - t1)
    ctx.count_work("training", step_flops(per_rank_batch) * (steps + 1))
    return {"compute_s": float(np.median(compute)), "comm_s": float(np.median(comm)),
            "iteration_s": float(np.median(np.add(compute, comm))), "gradient_bytes": float(flat.nbytes),
            "step_s": list(np.add(compute, comm))}


def rank0_alone(ctx, work: Callable[[], Any]) -> tuple[Any, float]:
    """``work()`` run by rank 0 while every other rank sleeps, its result on every rank, and the
    most CPU seconds a waiting rank used meanwhile (near 0: the waiters left rank 0 its core).

    A blocking MPI wait (``bcast``, ``Barrier``) may poll a core at 100 %: on a node of as many
    cores as ranks the 1-rank baseline would then share the machine with spinning ranks. The
    waiters test a non-blocking barrier and sleep between tests instead."""
    raw = ctx.comm.raw
    raw.Barrier()
    cpu0 = time.process_time()
    result = work() if ctx.is_root else None
    request = raw.Ibarrier()
    while not request.Test():
        time.sleep(QUIET_POLL_S)
    waited = 0.0 if ctx.is_root else time.process_time() - cpu0
    return raw.bcast(result, root=0), max(raw.allgather(waited))


def superlinear_cause(efficiency: float, batch_ratio: float, ranks: int) -> str:
    """Why a measured parallel efficiency is above 1, from the measured one-rank batch ratio:
    t1(global batch) / (ranks x t1(per-rank batch)), both on rank 0 alone. A ratio above 1 is
    compute per image that grows with the batch (cache, kernel shapes): splitting the batch
    alone speeds compute up by that much, which no roofline of the per-layer GEMMs predicts."""
    if efficiency <= 1.0:
        return "not above 1"
    if batch_ratio >= efficiency:
        return (f"explained: one rank at the global batch takes {batch_ratio:.2f}x {ranks} steps at the "
                f"per-rank batch (compute per image grows with the batch), which covers efficiency {efficiency:.2f}")
    if batch_ratio > 1.0:
        return (f"partly explained: the one-rank batch ratio {batch_ratio:.2f} covers efficiency up to that; "
                f"the rest up to {efficiency:.2f} is unexplained")
    return f"unexplained: the one-rank batch ratio is {batch_ratio:.2f}, compute per image does not grow with the batch"
