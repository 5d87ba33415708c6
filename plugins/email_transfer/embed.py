"""Word vectors "pre-trained" on unlabeled text: PPMI of word co-occurrence in a window,
factored by truncated SVD (the count-based counterpart of word2vec; Levy & Goldberg 2014).
The stand-in for the paper's pre-trained embeddings, learnt offline from the unlabeled corpus."""
from __future__ import annotations

import numpy as np


def tokenize(texts: list[str], vocab: dict[str, int]) -> list[np.ndarray]:
    return [np.array([vocab[w] for w in t.split() if w in vocab], dtype=np.int64) for t in texts]


def ppmi_svd(texts: list[str], dim: int = 32, window: int = 3) -> tuple[dict[str, int], np.ndarray]:
    """(vocabulary, vectors [V, dim]) from the unlabeled texts."""
    from scipy.sparse import coo_matrix
    from scipy.sparse.linalg import svds

    vocab = {w: i for i, w in enumerate(sorted({w for t in texts for w in t.split()}))}
    rows, cols = [], []
    for ids in tokenize(texts, vocab):
        for off in range(1, window + 1):
            rows += [ids[:-off], ids[off:]]
            cols += [ids[off:], ids[:-off]]
    r, c = np.concatenate(rows), np.concatenate(cols)
    v = len(vocab)
    counts = coo_matrix((np.ones(len(r)), (r, c)), shape=(v, v)).toarray()
    total = counts.sum()
    pw = counts.sum(axis=1, keepdims=True) / total
    cc = counts.sum(axis=0, keepdims=True) ** 0.75  # context-distribution smoothing, as word2vec
    pc = cc / cc.sum()
    with np.errstate(divide="ignore"):
        pmi = np.log(counts / total) - np.log(pw) - np.log(np.maximum(pc, 1e-300))
    ppmi = np.maximum(pmi, 0.0)
    u, s, _ = svds(ppmi, k=min(dim, v - 2))
    vectors = u * np.sqrt(s)
    return vocab, (vectors / (np.linalg.norm(vectors, axis=1, keepdims=True) + 1e-9)).astype(np.float32)
