"""Data-parallel training of the small CNN with torch, gradients averaged through ``ctx.comm``.

The network is the ``small_cnn`` layer table: conv3x3(3->32)+ReLU+pool, conv3x3(32->64)+ReLU+pool,
fc(4096->128)+ReLU, fc(128->10), on generated 32x32x3 images with 10 classes (a fixed random
teacher labels them; documented, seeded). One iteration = forward, backward, one Allreduce of
the flattened gradients (numpy view, profiled), SGD step.
"""
from __future__ import annotations

import time

import numpy as np


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
    return {"compute_s": float(np.median(compute)), "comm_s": float(np.median(comm)),
            "iteration_s": float(np.median(np.add(compute, comm))), "gradient_bytes": float(flat.nbytes),
            "step_s": list(np.add(compute, comm))}
