"""One training run (one optimizer, batch, smoother, learning rate, seed) of the digits MLP,
data-parallel over ranks: each rank takes its slice of every global batch; gradients (and, for
K-FAC, the curvature factors) are averaged with one profiled Allreduce per step."""
from __future__ import annotations

import math
import time
from typing import Any

import numpy as np


def mlp(seed: int, inputs: int = 64, hidden: int = 128, device: str = "cpu"):
    import torch

    torch.manual_seed(seed)   # initialised on the CPU, then moved: the same weights on every device
    return torch.nn.Sequential(torch.nn.Linear(inputs, hidden), torch.nn.ReLU(), torch.nn.Linear(hidden, hidden),
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


def noise_source(gen, cfg: dict[str, Any], seed: int):
    """The generator of the next SmoothOut draw: the training's running one (``smooth_noise=fresh``,
    Wen et al.: a new perturbation every slice), or one seeded afresh for every draw
    (``fixed``: the same perturbation direction for the whole training, the ablation where the
    weights are shifted but the loss is not averaged over their neighbourhood)."""
    import torch

    return gen if cfg.get("smooth_noise", "fresh") == "fresh" else torch.Generator().manual_seed(seed + 2)


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
    """Updates of one training: ``epochs`` passes over the rows (budget=epochs, the paper's protocol:
    a large batch takes fewer, larger steps) or ``updates`` (budget=steps: every configuration the
    same number, the ablation where a large batch trains for many more epochs)."""
    if cfg["budget"] == "steps":
        return cfg["updates"]
    factor = cfg.get("epochs_factor", 1.0)
    if factor == 1.0:
        return max(1, -(-cfg["epochs"] * n // min(cfg["batch"], n)))
    return max(1, math.ceil(cfg["epochs"] * factor * n / min(cfg["batch"], n)))


def learning_rate(cfg: dict[str, Any], base_lr: float, step: int, steps: int, n: int) -> float:
    """The rate at ``step``: ``base_lr`` (the rate at batch 32) scaled linearly with the batch
    (``lr_scaling=linear``, Goyal et al. 2017), a linear warm-up over ``warmup_epochs``, then cosine
    decay to zero, so every configuration ends its budget settled rather than at a high rate."""
    batch = min(cfg["batch"], n)
    peak = base_lr * (batch / 32 if cfg["lr_scaling"] == "linear" else 1.0)
    warm = min(steps - 1, max(0, round(cfg["warmup_epochs"] * n / batch)))
    if step < warm:
        return peak * (step + 1) / warm
    return peak * 0.5 * (1 + math.cos(math.pi * (step - warm) / max(1, steps - warm)))


_FLOPS_PER_ROW: dict[tuple[int, bool, str], float] = {}


def flops_per_row(inputs: int, true_fisher: bool, device: str) -> float:
    """Floating-point operations of the ``forward_backward`` phase per training row, as torch's
    flop counter counts them on a fresh network of the same shape (the weights do not change the
    count): the forward, the parameters' backward, and with ``fisher=true`` the second backward of
    the sampled labels. Counted once per process, outside every phase."""
    key = (inputs, true_fisher, device)
    if key not in _FLOPS_PER_ROW:
        import torch

        from harness import torch_flops

        rows = 64
        model = mlp(0, inputs=inputs, device=device)
        params = list(model.parameters())
        x, y = torch.zeros(rows, inputs, device=device), torch.zeros(rows, dtype=torch.long, device=device)
        loss_fn = torch.nn.CrossEntropyLoss()

        def step() -> None:
            logits = model(x)
            if true_fisher:
                torch.autograd.grad(loss_fn(logits, y), params, retain_graph=True)
            torch.autograd.grad(loss_fn(logits, y), params)

        _FLOPS_PER_ROW[key] = torch_flops(step) / rows
    return _FLOPS_PER_ROW[key]


def train_once(ctx, x: np.ndarray, y: np.ndarray, cfg: dict[str, Any], lr: float, seed: int,
               on_eval=None, eval_every: int = 0) -> dict[str, Any]:
    """Train for :func:`step_count` updates; returns the model and its step statistics.
    ``on_eval(model, step)`` is called every ``eval_every`` steps and after the last (its time is
    in ``eval_s``, left out of ``train_s``).

    With ``smoothing=smoothout`` each ``smooth_slice`` rows of a rank's batch get their own fresh
    weight noise (Wen et al. draw it per slice, not once per large batch); the gradient is the
    mean over the slices. K-FAC's factors are taken from every slice's forward/backward."""
    import torch

    from harness_plugins.kfac.kfac import KFAC

    model = mlp(seed, inputs=x.shape[1], device=ctx.device)
    opt = torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9, weight_decay=cfg["weight_decay"])
    kfac = (KFAC(model, damping=cfg["damping"], kl_clip=cfg.get("kl_clip", 1e-3),
                 isotropic=cfg.get("curvature") == "isotropic") if cfg["optimizer"] == "kfac" else None)
    loss_fn = torch.nn.CrossEntropyLoss()
    rng = np.random.default_rng(seed)             # the same on every rank: the same global batches
    gen = torch.Generator().manual_seed(seed + 1)  # the same smoothing noise on every rank
    xt, yt = torch.from_numpy(x).to(ctx.device), torch.from_numpy(y).to(ctx.device)
    batch = min(cfg["batch"], len(x))
    per_rank = max(1, batch // ctx.nranks)
    params = list(model.parameters())
    steps = step_count(cfg, len(x))
    true_fisher = kfac is not None and cfg.get("fisher") == "true"
    smooth = cfg["smoothing"] == "smoothout"
    slice_rows = cfg["smooth_slice"] if smooth else per_rank
    stream = batches(len(x), batch, rng)
    per_row = flops_per_row(x.shape[1], true_fisher, ctx.device)
    rows = 0
    t0 = time.perf_counter()
    eval_s = 0.0
    for step in range(steps):
        idx = torch.from_numpy(next(stream)[ctx.rank * per_rank:(ctx.rank + 1) * per_rank]).to(ctx.device)
        for group in opt.param_groups:
            group["lr"] = learning_rate(cfg, lr, step, steps, len(x))
        with ctx.phase("forward_backward"):
            if len(idx) <= slice_rows and not smooth and not true_fisher:
                # one slice (no SmoothOut, the empirical Fisher): the step's gradient taken directly,
                # the same bits as the loop below (0 + g and g x 1.0 are exact) without its
                # per-parameter zeroing and additions
                if kfac is not None:
                    kfac.capture, kfac.g_scale = True, 1.0
                grads = list(torch.autograd.grad(loss_fn(model(xt[idx]), yt[idx]), params))
            else:
                grads = [torch.zeros_like(q) for q in params]
                for lo in range(0, len(idx), slice_rows):
                    part = idx[lo:lo + slice_rows]
                    frac = len(part) / len(idx)
                    noise = smoothout(model, cfg["smooth_a"], noise_source(gen, cfg, seed)) if smooth else None
                    logits = model(xt[part])
                    if true_fisher:   # g from labels sampled from the model's own predictive distribution
                        probs = torch.softmax(logits.detach(), 1).cpu()   # sampled with the CPU generator
                        sampled = torch.multinomial(probs, 1, generator=gen)[:, 0].to(logits.device)
                        kfac.capture, kfac.g_scale = True, 1.0
                        torch.autograd.grad(loss_fn(logits, sampled), params, retain_graph=True)
                        kfac.capture = False
                    elif kfac is not None:
                        kfac.capture, kfac.g_scale = True, frac
                    for g, d in zip(grads, torch.autograd.grad(loss_fn(logits, yt[part]) * frac, params)):
                        g.add_(d)
                    if noise is not None:
                        with torch.no_grad():
                            for q, n in zip(params, noise):
                                q.sub_(n)
            for q, g in zip(params, grads):
                q.grad = g
        rows += len(idx)
        factors = kfac.batch_factors() if kfac else []
        if ctx.nranks > 1:
            local = _flat([q.grad for q in params] + factors)
            total = np.empty_like(local)
            ctx.comm.Allreduce(local, total)
            merged = _unflat(total / ctx.nranks, [q.grad for q in params] + factors)
            for q, g in zip(params, merged):
                q.grad.copy_(g)
            factors = merged[len(params):]
        with ctx.phase("optimizer"):
            if kfac:
                kfac.update(factors)
                kfac.precondition(opt.param_groups[0]["lr"])
            opt.step()
        if on_eval is not None and ((step + 1) % eval_every == 0 or step + 1 == steps):
            ta = time.perf_counter()
            with ctx.phase("validation"):
                on_eval(model, step + 1)
            eval_s += time.perf_counter() - ta
    ctx.count_work("forward_backward", per_row * rows)
    return {"model": model, "steps": steps, "train_s": time.perf_counter() - t0 - eval_s, "eval_s": eval_s}


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
