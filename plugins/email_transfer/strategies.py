"""The paper's implementation strategies on one encoder (docs/workloads/email_transfer.md):

- feature-based: the encoder frozen, its email embeddings fed to a logistic regression
  (``logistic``) or to the classification head alone (``frozen_head``);
- fine-tuning: the encoder and the same head trained end to end (``fine_tune``).

The head is the same module on both sides (embedding -> 64 ReLU -> intents), trained by Adam at
the same batch and rate, and each arm stops by the same rule (:class:`StopRule`): by default when
an epoch's mean training loss reaches the same target (equal training loss: both arms fitted
their n labelled emails equally well), so a difference between strategies is neither capacity
nor how far each was trained. The logistic regression is fitted to convergence instead (another
rule, reported beside them). Each strategy returns a :class:`Trained`: its test predictions, its
training loss (mean cross-entropy on its n labelled emails after training), the updates it took
and why it stopped, so a reader sees how far each arm was trained.
"""
from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
import torch

HIDDEN = 64


@dataclass(frozen=True)
class StopRule:
    """When one arm's training stops. ``fixed`` updates (the BERT recipe's epochs, or the
    steps ablation): the arm is at quality if its last epoch's mean training loss is at most
    ``loss_target``. Otherwise (``budget=loss``) whole epochs until that mean reaches
    ``loss_target`` ("target"), or ``patience`` epochs in a row without lowering the best by more
    than ``delta`` ("plateau": as far as this rate and data take it), at most ``max_steps``
    updates ("budget": not at quality, its claims inconclusive)."""

    loss_target: float
    fixed: int | None = None
    patience: int = 3
    delta: float = 0.005
    max_steps: int = 600

    @property
    def limit(self) -> int:
        """The most updates an arm takes under this rule."""
        return self.fixed or self.max_steps


class Trained(NamedTuple):
    preds: np.ndarray     # test predictions
    loss: float           # training loss after training (evaluation mode)
    updates: int = 0      # optimizer updates taken
    stop: str = "target"  # target, plateau (at quality), budget (not)

    @property
    def reached(self) -> bool:
        return self.stop in ("target", "plateau")


def train_until(step: Callable[[np.ndarray], float], n: int, batch: int, seed: int,
                rule: StopRule) -> tuple[int, str]:
    """Calls ``step(rows)`` (one update on those of the n rows; returns its loss) over
    :func:`minibatches` until ``rule`` stops it: (updates taken, why it stopped). The figure is
    each epoch's mean minibatch loss, observed at the epoch's end (no extra pass over the data)."""
    from harness import QualityRule, QualityTracker

    per_epoch = -(-n // min(batch, n))
    limit = rule.limit
    tracker = None if rule.fixed else QualityTracker(QualityRule(
        target=-rule.loss_target, stop_at_target=True, delta=rule.delta, patience=rule.patience, lr_drops=0,
        max_steps=limit, eval_every=per_epoch))
    epoch: list[float] = []
    for i, rows in enumerate(minibatches(n, limit, batch, seed), 1):
        epoch.append(step(rows))
        if i % per_epoch and i != limit:
            continue
        mean, epoch = float(np.mean(epoch)), []
        if tracker is not None and tracker.observe(i, -mean):
            return i, tracker.stopped
        if tracker is None and i == limit:
            return i, "target" if mean <= rule.loss_target else "budget"
    return limit, "budget"


def head(dim: int, classes: int, seed: int) -> torch.nn.Module:
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Linear(dim, HIDDEN), torch.nn.ReLU(), torch.nn.Linear(HIDDEN, classes))


@torch.no_grad()
def embed(encoder: torch.nn.Module, texts: list[str], batch: int = 64) -> np.ndarray:
    """The frozen encoder's embeddings of ``texts`` [n, dim] (evaluation mode: no dropout)."""
    encoder.eval()
    return torch.cat([encoder(texts[i:i + batch]) for i in range(0, len(texts), batch)]).numpy()


def logistic(x_train: np.ndarray, y_train: np.ndarray, x_test: np.ndarray, seed: int) -> Trained:
    """A logistic regression (C=1) on standardised frozen embeddings, fitted to convergence."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import log_loss
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    clf = make_pipeline(StandardScaler(), LogisticRegression(max_iter=2000, C=1.0, random_state=seed))
    clf.fit(x_train, y_train)
    iterations = int(np.max(clf[-1].n_iter_))
    return Trained(clf.predict(x_test), float(log_loss(y_train, clf.predict_proba(x_train), labels=clf.classes_)),
                   iterations, "target" if iterations < 2000 else "budget")


def training_loss(logits: torch.Tensor, y: torch.Tensor) -> float:
    """Mean cross-entropy of a trained network on its own training rows."""
    return float(torch.nn.functional.cross_entropy(logits, y))


def minibatches(n: int, updates: int, batch: int, seed: int):
    """``updates`` index batches of min(batch, n) rows, each epoch a fresh permutation."""
    rng = np.random.default_rng(seed)
    size, order = min(batch, n), np.empty(0, dtype=np.int64)
    for _ in range(updates):
        if len(order) < size:
            order = np.concatenate([order, rng.permutation(n)])
        yield order[:size]
        order = order[size:]


def update(opt: torch.optim.Optimizer, loss: torch.Tensor) -> float:
    """One Adam step on ``loss``; its value."""
    opt.zero_grad()
    loss.backward()
    opt.step()
    return float(loss.detach())


def frozen_head(x_train: np.ndarray, y_train: np.ndarray, x_test: np.ndarray, classes: int, seed: int,
                rule: StopRule, batch: int, head_lr: float) -> Trained:
    """The head trained alone on frozen embeddings."""
    net = head(x_train.shape[1], classes, seed)
    opt = torch.optim.Adam(net.parameters(), lr=head_lr)
    x, y = torch.from_numpy(x_train), torch.from_numpy(y_train)
    updates, stop = train_until(lambda rows: update(opt, torch.nn.functional.cross_entropy(net(x[rows]), y[rows])),
                                len(y), batch, seed, rule)
    with torch.no_grad():
        return Trained(net(torch.from_numpy(x_test)).argmax(1).numpy(), training_loss(net(x), y), updates, stop)


def fine_tune(encoder: torch.nn.Module, texts: list[str], y_train: np.ndarray, test: list[str], classes: int,
              seed: int, rule: StopRule, batch: int, head_lr: float, encoder_lr: float) -> Trained:
    """A copy of ``encoder`` and the head trained end to end (Adam; ``encoder_lr`` for the
    encoder's weights, ``head_lr`` for the head's)."""
    enc = copy.deepcopy(encoder)
    enc.train()
    net = head(enc.dim, classes, seed)
    opt = torch.optim.Adam([{"params": enc.parameters(), "lr": encoder_lr},
                            {"params": net.parameters(), "lr": head_lr}])
    y = torch.from_numpy(y_train)
    updates, stop = train_until(
        lambda rows: update(opt, torch.nn.functional.cross_entropy(net(enc([texts[i] for i in rows])), y[rows])),
        len(y), batch, seed, rule)
    with torch.no_grad():
        seen = torch.from_numpy(embed(enc, texts))
        return Trained(net(torch.from_numpy(embed(enc, test))).argmax(1).numpy(), training_loss(net(seen), y),
                       updates, stop)
