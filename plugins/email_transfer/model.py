"""The two implementation strategies the paper compares (docs/papers.md section 5):
feature-based (frozen pre-trained vectors, mean-pooled, then logistic regression) and
fine-tuning (a small network whose embedding starts from the same vectors and is trained
end to end with its classifier)."""
from __future__ import annotations

import numpy as np


def mean_vectors(ids: list[np.ndarray], vectors: np.ndarray) -> np.ndarray:
    out = np.zeros((len(ids), vectors.shape[1]), dtype=np.float32)
    for i, row in enumerate(ids):
        if len(row):
            out[i] = vectors[row].mean(axis=0)
    return out


def feature_based(train_ids, y_train, test_ids, vectors, seed: int) -> np.ndarray:
    """Predicted test labels of a logistic regression on the frozen mean vectors."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    # standardised features: mean vectors are short, and C=1 would then regularise them to nothing
    clf = make_pipeline(StandardScaler(), LogisticRegression(max_iter=2000, C=1.0, random_state=seed))
    clf.fit(mean_vectors(train_ids, vectors), y_train)
    return clf.predict(mean_vectors(test_ids, vectors))


def _bag(ids: list[np.ndarray]):
    import torch

    lengths = [max(1, len(r)) for r in ids]
    flat = np.concatenate([r if len(r) else np.zeros(1, dtype=np.int64) for r in ids])
    offsets = np.concatenate([[0], np.cumsum(lengths)[:-1]])
    return torch.from_numpy(flat), torch.from_numpy(offsets.astype(np.int64))


def fine_tune(train_ids, y_train, test_ids, vectors, seed: int, epochs: int, classes: int = 4,
              hidden: int = 64, lr: float = 3e-3, batch: int = 32) -> np.ndarray:
    """Predicted test labels of EmbeddingBag(mean, from the vectors) -> ReLU layer -> classes,
    every weight trained with Adam."""
    import torch

    torch.manual_seed(seed)
    emb = torch.nn.EmbeddingBag.from_pretrained(torch.from_numpy(vectors), freeze=False, mode="mean")
    net = torch.nn.Sequential(torch.nn.Linear(vectors.shape[1], hidden), torch.nn.ReLU(),
                              torch.nn.Linear(hidden, classes))
    opt = torch.optim.Adam(list(emb.parameters()) + list(net.parameters()), lr=lr)
    rng = np.random.default_rng(seed)
    y = torch.from_numpy(y_train)
    for _ in range(epochs):
        order = rng.permutation(len(train_ids))
        for start in range(0, len(order), batch):
            idx = order[start:start + batch]
            flat, offsets = _bag([train_ids[i] for i in idx])
            loss = torch.nn.functional.cross_entropy(net(emb(flat, offsets)), y[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
    with torch.no_grad():
        flat, offsets = _bag(test_ids)
        return net(emb(flat, offsets)).argmax(1).numpy()
