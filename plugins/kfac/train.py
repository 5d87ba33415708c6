"""One training run (one optimizer, batch, smoother, learning rate, seed) of the digits MLP,
data-parallel over ranks: each rank takes its slice of every global batch; gradients (and, for
K-FAC, the curvature factors) are averaged with one profiled Allreduce per step."""
from __future__ import annotations

import time
from typing import Any

import numpy as np


def mlp(seed: int, hidden: int = 128, device: str = "cpu"):
    import torch

    torch.manual_seed(seed)   # initialised on the CPU, then moved: the same weights on every device
    return torch.nn.Sequential(torch.nn.Linear(64, hidden), torch.nn.ReLU(), torch.nn.Linear(hidden, hidden),
                               torch.nn.ReLU(), torch.nn.Linear(hidden, 10)).to(device)


def _flat(tensors: list[Any]) -> np.ndarray:
    return np.concatenate([t.detach().cpu().numpy().ravel() for t in tensors]).astype(np.float64)


def _unflat(buf: np.ndarray, like: list[Any]) -> list[Any]:
    import torch

    out, i = [], 0
    for t in like:
        n = t.numel()
        out.append(torch.from_numpy(buf[i:i + n].reshape(t.shape)).to(dtype=t.dtype, device=t.device))
        i += n
    return out


def smoothout(model, a: float, gen) -> list[Any]:
    """Perturb every weight by U(-a, a) times its layer's weight std (SmoothOut, Wen et al. 2018,
    scaled per layer); returns the noise so that it can be taken off after the backward pass.
    ``gen`` is a CPU generator: the same noise whatever the model's device."""
    import torch

    noise = []
    with torch.no_grad():
        for p in model.parameters():
            u = torch.rand(p.shape, generator=gen).to(p.device)
            n = (u * 2 - 1) * a * (p.std() if p.numel() > 1 else 1.0)
            p.add_(n)
            noise.append(n)
    return noise


def batches(n: int, batch: int, rng: np.random.Generator):
    """Global batches of ``batch`` row indices drawn from one permutation after another, so no row
    is dropped when ``batch`` does not divide ``n``; a batch may straddle two permutations."""
    pending = np.empty(0, dtype=np.int64)
    while True:
        while len(pending) < batch:
            pending = np.concatenate([pending, rng.permutation(n)])
        yield pending[:batch]
        pending = pending[batch:]


def step_count(cfg: dict[str, Any], n: int) -> int:
    """Updates of one training: ``updates`` (budget=steps: every configuration the same number) or
    ``epochs`` passes over the rows (budget=epochs: a large batch takes far fewer steps)."""
    if cfg["budget"] == "steps":
        return cfg["updates"]
    return max(1, cfg["epochs"] * n // min(cfg["batch"], n))


def train_once(ctx, x: np.ndarray, y: np.ndarray, cfg: dict[str, Any], lr: float, seed: int) -> dict[str, Any]:
    """Train for :func:`step_count` updates; returns the model and its step statistics."""
    import torch

    from harness_plugins.kfac.kfac import KFAC

    model = mlp(seed, device=ctx.device)
    opt = torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9, weight_decay=cfg["weight_decay"])
    kfac = KFAC(model, damping=cfg["damping"]) if cfg["optimizer"] == "kfac" else None
    loss_fn = torch.nn.CrossEntropyLoss()
    rng = np.random.default_rng(seed)             # the same on every rank: the same global batches
    gen = torch.Generator().manual_seed(seed + 1)  # the same smoothing noise on every rank
    xt, yt = torch.from_numpy(x).to(ctx.device), torch.from_numpy(y).to(ctx.device)
    batch = min(cfg["batch"], len(x))
    per_rank = max(1, batch // ctx.nranks)
    params = list(model.parameters())
    steps = step_count(cfg, len(x))
    true_fisher = kfac is not None and cfg.get("fisher") == "true"
    stream = batches(len(x), batch, rng)
    t0 = time.perf_counter()
    for _ in range(steps):
        idx = torch.from_numpy(next(stream)[ctx.rank * per_rank:(ctx.rank + 1) * per_rank]).to(ctx.device)
        noise = smoothout(model, cfg["smooth_a"], gen) if cfg["smoothing"] == "smoothout" else None
        with ctx.phase("forward_backward"):
            opt.zero_grad()
            logits = model(xt[idx])
            if true_fisher:   # g from labels sampled from the model's own predictive distribution
                probs = torch.softmax(logits.detach(), 1).cpu()   # sampled with the CPU generator
                sampled = torch.multinomial(probs, 1, generator=gen)[:, 0].to(logits.device)
                loss_fn(logits, sampled).backward(retain_graph=True)
                opt.zero_grad()
                kfac.capture = False
            loss = loss_fn(logits, yt[idx])
            loss.backward()
            if kfac is not None:
                kfac.capture = True
        if noise is not None:
            with torch.no_grad():
                for p, n in zip(params, noise):
                    p.sub_(n)
        factors = kfac.batch_factors() if kfac else []
        if ctx.nranks > 1:
            local = _flat([p.grad for p in params] + factors)
            total = np.empty_like(local)
            ctx.comm.Allreduce(local, total)
            merged = _unflat(total / ctx.nranks, [p.grad for p in params] + factors)
            for p, g in zip(params, merged):
                p.grad.copy_(g)
            factors = merged[len(params):]
        with ctx.phase("optimizer"):
            if kfac:
                kfac.update(factors)
                kfac.precondition(lr)
            opt.step()
    return {"model": model, "steps": steps, "train_s": time.perf_counter() - t0}


def accuracy(model, x: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    """(accuracy, mean cross-entropy) in eval mode."""
    import torch

    model.eval()
    device = next(model.parameters()).device
    with torch.no_grad():
        logits = model(torch.from_numpy(x).to(device))
        loss = float(torch.nn.functional.cross_entropy(logits, torch.from_numpy(y).to(device)))
        acc = float((logits.argmax(1).cpu().numpy() == y).mean())
    model.train()
    return acc, loss
