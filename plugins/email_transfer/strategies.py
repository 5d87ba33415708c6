"""The paper's implementation strategies on one encoder (docs/workloads/email_transfer.md):

- feature-based: the encoder frozen, its email embeddings fed to a logistic regression
  (``logistic``) or to the classification head alone (``frozen_head``);
- fine-tuning: the encoder and the same head trained end to end (``fine_tune``).

The head is the same module on both sides (embedding -> 64 ReLU -> intents), and the head and
the fine-tuned encoder get the same number of Adam updates at the same batch for every label
count n, so a difference between strategies is neither capacity nor optimisation budget. The
logistic regression is fitted to convergence instead (another rule, reported beside them). Each
strategy returns its test predictions and its training loss (mean cross-entropy on its n
labelled emails after training), so a reader sees how far each arm was trained.
"""
from __future__ import annotations

import copy

import numpy as np
import torch

HIDDEN = 64


def head(dim: int, classes: int, seed: int) -> torch.nn.Module:
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Linear(dim, HIDDEN), torch.nn.ReLU(), torch.nn.Linear(HIDDEN, classes))


@torch.no_grad()
def embed(encoder: torch.nn.Module, texts: list[str], batch: int = 64) -> np.ndarray:
    """The frozen encoder's embeddings of ``texts`` [n, dim] (evaluation mode: no dropout)."""
    encoder.eval()
    return torch.cat([encoder(texts[i:i + batch]) for i in range(0, len(texts), batch)]).numpy()


Trained = tuple[np.ndarray, float]   # test predictions, training loss


def logistic(x_train: np.ndarray, y_train: np.ndarray, x_test: np.ndarray, seed: int) -> Trained:
    """A logistic regression (C=1) on standardised frozen embeddings, fitted to convergence."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import log_loss
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    clf = make_pipeline(StandardScaler(), LogisticRegression(max_iter=2000, C=1.0, random_state=seed))
    clf.fit(x_train, y_train)
    return clf.predict(x_test), float(log_loss(y_train, clf.predict_proba(x_train), labels=clf.classes_))


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


def frozen_head(x_train: np.ndarray, y_train: np.ndarray, x_test: np.ndarray, classes: int, seed: int,
                updates: int, batch: int, head_lr: float) -> Trained:
    """The head trained alone on frozen embeddings."""
    net = head(x_train.shape[1], classes, seed)
    opt = torch.optim.Adam(net.parameters(), lr=head_lr)
    x, y = torch.from_numpy(x_train), torch.from_numpy(y_train)
    for idx in minibatches(len(y), updates, batch, seed):
        loss = torch.nn.functional.cross_entropy(net(x[idx]), y[idx])
        opt.zero_grad()
        loss.backward()
        opt.step()
    with torch.no_grad():
        return net(torch.from_numpy(x_test)).argmax(1).numpy(), training_loss(net(x), y)


def fine_tune(encoder: torch.nn.Module, texts: list[str], y_train: np.ndarray, test: list[str], classes: int,
              seed: int, updates: int, batch: int, head_lr: float, encoder_lr: float) -> Trained:
    """A copy of ``encoder`` and the head trained end to end (Adam; ``encoder_lr`` for the
    encoder's weights, ``head_lr`` for the head's)."""
    enc = copy.deepcopy(encoder)
    enc.train()
    net = head(enc.dim, classes, seed)
    opt = torch.optim.Adam([{"params": enc.parameters(), "lr": encoder_lr},
                            {"params": net.parameters(), "lr": head_lr}])
    y = torch.from_numpy(y_train)
    for idx in minibatches(len(y), updates, batch, seed):
        loss = torch.nn.functional.cross_entropy(net(enc([texts[i] for i in idx])), y[idx])
        opt.zero_grad()
        loss.backward()
        opt.step()
    with torch.no_grad():
        seen = torch.from_numpy(embed(enc, texts))
        return net(torch.from_numpy(embed(enc, test))).argmax(1).numpy(), training_loss(net(seen), y)
