"""MiniLM with its lower layers run once: what does not change between seeds is computed once.

Tokenisation and the hidden states below the ``tune_layers`` top transformer layers are the same
for every seed, label count and strategy, so they are computed once per email (``CachedMiniLM``).
Fine-tuning trains a copy of the top layers and the head on those cached states (the lower
layers stay frozen: partial fine-tuning, stated as a deviation in docs/workloads/email_transfer.md);
the feature-based arm's embedding is the whole frozen encoder's pooled output, the same numbers
``MiniLMEncoder`` gives (a test checks it).
"""
from __future__ import annotations

import copy

import numpy as np
import torch

from harness_plugins.email_transfer.strategies import StopRule, Trained, head, train_until, training_loss, update


class CachedMiniLM:
    """Hidden states of every text below the top ``tune_layers`` layers, with the attention masks."""

    def __init__(self, encoder, texts: list[str], tune_layers: int, batch: int = 64) -> None:
        layers = encoder.model.encoder.layer
        if not 1 <= tune_layers <= len(layers):
            raise ValueError(f"tune_layers={tune_layers}: MiniLM has {len(layers)} layers; give 1..{len(layers)}")
        self.cut = len(layers) - tune_layers
        self.top = layers[self.cut:]
        self.dim = encoder.dim
        tokens = encoder.tokenizer(texts, padding=True, truncation=True, max_length=encoder.max_length,
                                   return_tensors="pt")
        self.mask = tokens["attention_mask"]
        encoder.eval()
        with torch.no_grad():
            self.hidden = torch.cat([
                encoder.model(**{k: v[i:i + batch] for k, v in tokens.items()},
                              output_hidden_states=True).hidden_states[self.cut]
                for i in range(0, len(texts), batch)])

    def pooled(self, idx, top=None) -> torch.Tensor:
        """Mean-pooled output of ``top`` (default: the pretrained top layers) for rows ``idx``."""
        mask = self.mask[idx]
        width = int(mask.sum(1).max())
        mask = mask[:, :width]
        hidden = self.hidden[idx, :width]
        additive = (1.0 - mask[:, None, None, :].to(hidden.dtype)) * torch.finfo(hidden.dtype).min
        for layer in (self.top if top is None else top):
            out = layer(hidden, attention_mask=additive)
            hidden = out[0] if isinstance(out, tuple) else out
        m = mask.unsqueeze(-1).to(hidden.dtype)
        return (hidden * m).sum(1) / m.sum(1).clamp(min=1.0)

    @torch.no_grad()
    def features(self, batch: int = 128) -> np.ndarray:
        """The frozen encoder's embedding of every cached text [n, dim]."""
        self.top.eval()
        n = len(self.mask)
        return torch.cat([self.pooled(np.arange(i, min(n, i + batch))) for i in range(0, n, batch)]).numpy()


class StepFlops:
    """Floating-point operations of fine-tuning's steps and evaluations, as torch's flop counter
    counts them, for any batch: a transformer layer's count is ``rows x (a + b w + c w^2)`` for
    ``w`` tokens (projections and feed-forward linear in w, attention quadratic), so three counted
    one-row batches (4, 8 and 12 tokens) per mode give it exactly, without counting every step."""

    WIDTHS = (4, 8, 12)

    def __init__(self, pool: CachedMiniLM, classes: int, tune_encoder: bool) -> None:
        from harness import torch_flops

        top = copy.deepcopy(pool.top)
        top.requires_grad_(tune_encoder)
        net = head(pool.dim, classes, 0)
        probe = _Probe(pool, top)
        self.coef = {}
        for train in (True, False):
            counts = []
            for w in self.WIDTHS:
                def step(w=w, train=train) -> None:
                    logits = net(probe.pooled(w))
                    if train:
                        torch.nn.functional.cross_entropy(logits, torch.zeros(1, dtype=torch.long)).backward()
                counts.append(torch_flops(step) if train else _no_grad_flops(step))
            self.coef[train] = np.linalg.solve(np.array([[1.0, w, w * w] for w in self.WIDTHS]), np.array(counts, float))

    def __call__(self, rows: int, width: int, train: bool) -> float:
        a, b, c = self.coef[train]
        return rows * (a + b * width + c * width * width)


class _Probe:
    """A one-row batch of ``w`` tokens through ``top`` (hidden states of the cached width's dtype)."""

    def __init__(self, pool: CachedMiniLM, top) -> None:
        self.pool, self.top = pool, top

    def pooled(self, w: int) -> torch.Tensor:
        hidden = torch.zeros(1, w, self.pool.hidden.shape[-1], dtype=self.pool.hidden.dtype)
        mask = torch.ones(1, w, dtype=self.pool.mask.dtype)
        additive = (1.0 - mask[:, None, None, :].to(hidden.dtype)) * torch.finfo(hidden.dtype).min
        for layer in self.top:
            out = layer(hidden, attention_mask=additive)
            hidden = out[0] if isinstance(out, tuple) else out
        return hidden.mean(1)


def _no_grad_flops(step) -> int:
    from harness import torch_flops

    with torch.no_grad():
        return torch_flops(step)


def batch_width(cached: CachedMiniLM, rows) -> int:
    """Tokens the batch ``rows`` runs at (its longest email: :meth:`CachedMiniLM.pooled` trims to it)."""
    return int(cached.mask[rows].sum(1).max())


def fine_tune_top(pool: CachedMiniLM, idx: np.ndarray, y_train: np.ndarray, test: CachedMiniLM, classes: int,
                  seed: int, rule: StopRule, batch: int, head_lr: float, encoder_lr: float,
                  flops: StepFlops | None = None, counted: list[float] | None = None) -> Trained:
    """Test predictions, training loss, updates and stop reason of a copy of the top layers and the
    head trained by Adam until ``rule`` stops it (``encoder_lr`` 0: the top layers run as in
    fine-tuning, in training mode, but stay as pretrained; only the head learns). With ``flops``,
    the operations of the training and its evaluations are added to ``counted[0]``."""
    top = copy.deepcopy(pool.top)
    top.train()
    net = head(pool.dim, classes, seed)
    groups = [{"params": net.parameters(), "lr": head_lr}]
    if encoder_lr > 0:
        groups.append({"params": top.parameters(), "lr": encoder_lr})
    else:
        top.requires_grad_(False)
    opt = torch.optim.Adam(groups)
    y = torch.from_numpy(y_train)
    torch.manual_seed(seed)   # dropout masks
    work = 0.0

    def step(rows: np.ndarray) -> float:
        nonlocal work
        if flops is not None:
            work += flops(len(rows), batch_width(pool, idx[rows]), True)
        return update(opt, torch.nn.functional.cross_entropy(net(pool.pooled(idx[rows], top)), y[rows]))

    updates, stop = train_until(step, len(y), batch, seed, rule)
    top.eval()
    with torch.no_grad():
        n = len(test.mask)
        logits = torch.cat([net(test.pooled(np.arange(i, min(n, i + 128)), top)) for i in range(0, n, 128)])
        seen = torch.cat([net(pool.pooled(idx[i:i + 128], top)) for i in range(0, len(idx), 128)])
    if flops is not None and counted is not None:
        work += sum(flops(len(r), batch_width(test, r), False) for r in (np.arange(i, min(n, i + 128)) for i in range(0, n, 128)))
        work += sum(flops(len(r), batch_width(pool, r), False) for r in (idx[i:i + 128] for i in range(0, len(idx), 128)))
        counted[0] += work
    return Trained(logits.argmax(1).numpy(), training_loss(seen, y), updates, stop)
