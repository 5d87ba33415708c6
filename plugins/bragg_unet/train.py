"""Data-parallel training of the U-Net: each rank takes its slice of every global batch, the
gradients are averaged with one profiled Allreduce per step (``ctx.comm``), then every rank takes
the same optimizer step, so the replicas stay identical (checked with a checksum per step)."""
from __future__ import annotations

import copy
import time
import zlib

import numpy as np


def _flat_grads(params, buf: np.ndarray) -> None:
    i = 0
    for p in params:
        n = p.numel()
        buf[i:i + n] = p.grad.detach().cpu().numpy().ravel()
        i += n


def _set_grads(params, buf: np.ndarray) -> None:
    import torch

    i = 0
    for p in params:
        n = p.numel()
        p.grad.copy_(torch.from_numpy(buf[i:i + n]).view_as(p.grad).to(p.grad.device))
        i += n


def checksum(model) -> int:
    """crc32 of every trainable parameter (BatchNorm running statistics stay per rank until the end)."""
    return zlib.crc32(b"".join(p.detach().cpu().numpy().tobytes() for p in model.parameters()))


_STEP_FLOPS: dict[tuple, tuple[float, float]] = {}


def step_flops(model, xb, yb) -> tuple[float, float]:
    """(forward, backward) floating-point operations of one training step on the batch ``xb``, as
    torch's flop counter counts them (convolutions and matrix products), on a copy of ``model``
    (its weights and BatchNorm statistics untouched). Counted once per network shape and batch shape."""
    from harness import torch_flops

    from harness_plugins.bragg_unet.model import dice_bce_loss

    key = (type(model).__name__, sum(p.numel() for p in model.parameters()), tuple(xb.shape))
    if key not in _STEP_FLOPS:
        twin = copy.deepcopy(model)
        forward = torch_flops(lambda: dice_bce_loss(twin(xb), yb))
        both = torch_flops(lambda: dice_bce_loss(twin(xb), yb).backward())
        _STEP_FLOPS[key] = (float(forward), float(both - forward))
    return _STEP_FLOPS[key]


def train(ctx, model, x: np.ndarray, y: np.ndarray, steps: int, batch: int, lr: float, seed: int,
          quality=None, validate=None, log=None) -> dict:
    """Adam on global batches of ``batch`` boxes; returns throughput, agreement and, when
    trained to quality, the stop's metrics. Without ``quality``: ``steps`` steps. With a
    :class:`harness.QualityTracker`: until it says stop (target, plateau or its
    ``max_steps``), ``validate(model)`` giving the validation figure on rank 0 (BatchNorm's running
    statistics are per rank until the end), broadcast so that every rank stops at the same step;
    each plateau before the last divides the rate by 10, and the weights kept are those of the
    best validation figure (as Keras's EarlyStopping with restore_best_weights).
    ``log``: a :class:`harness.TrainingLog` for the evaluations."""
    import torch

    from harness_plugins.bragg_unet.model import dice_bce_loss

    dev = next(model.parameters()).device
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    params = [p for p in model.parameters()]
    flat = np.empty(sum(p.numel() for p in params), dtype=np.float32)
    out = np.empty_like(flat)
    rng = np.random.default_rng(seed)  # same on every rank: the same global batches
    per_rank = max(1, batch // ctx.nranks)
    agree = True
    t_fwd = t_bwd = t_opt = 0.0
    model.train()
    # (forward, backward) flops of one step, counted on a batch of the same shape before the clock starts
    counted = step_flops(model, torch.from_numpy(x[:per_rank]).to(dev),
                         torch.from_numpy(y[:per_rank][:, None].astype(np.float32)).to(dev))
    t0 = time.perf_counter()
    eval_s = 0.0
    best_state = None
    total = quality.rule.max_steps if quality is not None else steps
    done = 0
    for step in range(1, total + 1):
        done = step
        idx = rng.choice(len(x), size=per_rank * ctx.nranks, replace=False)
        mine = idx[ctx.rank * per_rank:(ctx.rank + 1) * per_rank]
        xb = torch.from_numpy(x[mine]).to(dev)
        yb = torch.from_numpy(y[mine][:, None].astype(np.float32)).to(dev)
        with ctx.phase("forward"):
            ta = time.perf_counter()
            loss = dice_bce_loss(model(xb), yb)
            t_fwd += time.perf_counter() - ta
        with ctx.phase("backward"):
            ta = time.perf_counter()
            opt.zero_grad()
            loss.backward()
            t_bwd += time.perf_counter() - ta
        if ctx.nranks > 1:
            _flat_grads(params, flat)
            ctx.comm.Allreduce(flat, out)
            out /= ctx.nranks
            _set_grads(params, out)
        with ctx.phase("optimizer"):
            ta = time.perf_counter()
            opt.step()
            t_opt += time.perf_counter() - ta
        if ctx.nranks > 1:
            sums = ctx.comm.raw.allgather(checksum(model))  # evaluation only, unprofiled
            agree &= len(set(sums)) == 1
        if quality is not None and quality.rule.due(step):
            ta = time.perf_counter()
            with ctx.phase("validation"):
                value = validate(model) if ctx.rank == 0 else None
                if ctx.nranks > 1:
                    value = ctx.comm.raw.bcast(value, root=0)
                model.train()
            if log is not None:
                log.evaluation(step * per_rank * ctx.nranks, value)
            eval_s += time.perf_counter() - ta
            stop = quality.observe(step, value)
            if quality.is_top:     # the weights of the best validation figure are the ones kept
                best_state = copy.deepcopy(model.state_dict())
            if stop:
                break
            for group in opt.param_groups:
                group["lr"] = lr * quality.lr_scale
    seconds = time.perf_counter() - t0
    ctx.count_work("forward", counted[0] * done)
    ctx.count_work("backward", counted[1] * done)
    if quality is not None and best_state is not None:
        model.load_state_dict(best_state)
    # BatchNorm running statistics are per rank (local batches); they are averaged once at the
    # end, all buffers in one profiled Allreduce.
    if ctx.nranks > 1:
        bufs = [b for b in model.buffers() if b.dtype.is_floating_point]
        if bufs:
            arr = np.concatenate([b.detach().cpu().numpy().ravel().astype(np.float64) for b in bufs])
            total = np.empty_like(arr)
            ctx.comm.Allreduce(arr, total)
            total /= ctx.nranks
            offset = 0
            for b in bufs:
                n = b.numel()
                b.copy_(torch.from_numpy(total[offset:offset + n].reshape(b.shape)).to(b.dtype).to(b.device))
                offset += n
    return {"train_s": seconds, "boxes_per_s": done * per_rank * ctx.nranks / max(1e-12, seconds - eval_s),
            "forward_s": t_fwd, "backward_s": t_bwd, "optimizer_s": t_opt, "replicas_identical": agree,
            "final_loss": float(loss.detach()), "steps": done, "global_batch": per_rank * ctx.nranks}


def predict(model, x: np.ndarray, batch: int = 16) -> tuple[np.ndarray, float]:
    import torch

    dev = next(model.parameters()).device
    model.eval()
    outs = []
    t0 = time.perf_counter()
    with torch.no_grad():
        for i in range(0, len(x), batch):
            outs.append((model(torch.from_numpy(x[i:i + batch]).to(dev)) > 0).cpu().numpy()[:, 0])
    return np.concatenate(outs), len(x) / (time.perf_counter() - t0)
