"""Data for psgd_svm: built-in generated sets shaped like the paper's, or a LIBSVM file.

Generated sets (labelled ``synthetic-*`` in every record) are a linear teacher with label
noise, deterministic from ``seed``:

* x ~ N(0, C) with C = 0.5 I + 0.5 (an equicorrelated design);
  ``synthetic-webspam`` instead draws sparse non-negative features (10% non-zeros, like
  its unigram frequencies), centred and scaled by the population's mean and sd.
* a teacher w* ~ N(0, I); label y = sign(x . w* + 0.5 * N(0, 1)), then 10% of labels flipped.
* ``synthetic-ijcnn1``: 35,000 x 22 (ijcnn1's 22 features; the reference run uses 35,000
  training rows). ``synthetic-webspam``: 35,000 x 254 (webspam unigram's 254 features).

The split is the reference's: first 80% of rows train, the rest test (generated rows are i.i.d.; a
LIBSVM file's rows are shuffled with ``seed`` first, since such files are often sorted by class). Every
data set is then standardised with the training rows' statistics (``standardize=false`` keeps it raw).
"""
from __future__ import annotations

import pathlib
from dataclasses import dataclass

import numpy as np

from harness import UsageError

BUILTIN = {"synthetic-ijcnn1": 22, "synthetic-webspam": 254}
TRAIN_RATIO = 0.80
LABEL_NOISE = 0.10


@dataclass
class Split:
    x_train: np.ndarray
    y_train: np.ndarray
    x_test: np.ndarray
    y_test: np.ndarray
    name: str
    synthetic: bool


def generate(name: str, n_samples: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """The generated set ``name`` with ``n_samples`` rows (see the module docstring)."""
    d = BUILTIN[name]
    rng = np.random.default_rng(seed)
    if name == "synthetic-webspam":
        x = rng.exponential(1.0, size=(n_samples, d)) * (rng.random((n_samples, d)) < 0.10)
        x = (x - 0.10) / np.sqrt(0.19)   # the population's mean and sd (exp(1) x Bernoulli(0.1))
    else:
        common = rng.standard_normal((n_samples, 1))
        x = np.sqrt(0.5) * rng.standard_normal((n_samples, d)) + np.sqrt(0.5) * common
    teacher = rng.standard_normal(d)
    y = np.sign(x @ teacher + 0.5 * rng.standard_normal(n_samples))
    y[y == 0] = 1.0
    flip = rng.random(n_samples) < LABEL_NOISE
    y[flip] = -y[flip]
    return np.ascontiguousarray(x), y


def load_libsvm(path: str) -> tuple[np.ndarray, np.ndarray]:
    """A LIBSVM/svmlight file as dense float64 rows and labels mapped to +-1."""
    from sklearn.datasets import load_svmlight_file

    p = pathlib.Path(path)
    if not p.is_file():
        raise UsageError(f"dataset={path}: no such file (give a LIBSVM file or one of {', '.join(BUILTIN)})")
    try:
        x, y = load_svmlight_file(str(p))
    except ValueError as exc:
        raise UsageError(f"dataset={path}: not a valid LIBSVM file: {exc}{_first_bad_line(p)}") from None
    labels = np.unique(y)
    if labels.size != 2:
        raise UsageError(f"dataset={path}: a binary problem needs 2 label values, found {labels.size}")
    return np.ascontiguousarray(x.toarray()), np.where(y == labels.max(), 1.0, -1.0)


def check_libsvm_file(path: str) -> None:
    """Fail fast (in the parent) on a missing file or one with a malformed line."""
    p = pathlib.Path(path)
    if not p.is_file():
        raise UsageError(f"dataset={path}: no such file (give a LIBSVM file or one of {', '.join(BUILTIN)})")
    bad = _first_bad_line(p)
    if bad:
        raise UsageError(f"dataset={path}: not a valid LIBSVM file{bad}")


def _first_bad_line(path: pathlib.Path) -> str:
    """Name the first line that does not look like 'label idx:val ...' (the loader does not)."""
    with open(path, errors="replace") as f:
        for lineno, line in enumerate(f, 1):
            body = line.split("#", 1)[0].split()
            if not body:
                continue
            try:
                float(body[0])
                for tok in body[1:]:
                    idx, val = tok.split(":")
                    if idx != "qid":
                        int(idx), float(val)
            except ValueError:
                return f" (first bad line: {lineno}: {line.strip()[:80]!r})"
    return ""


def load(dataset: str, n_samples: int, seed: int, standardize: bool = True) -> Split:
    """Built-in name or path -> the 80/20 train/test split, each feature standardised with the
    training rows' mean and standard deviation only (the test rows never inform the scaling)."""
    if dataset in BUILTIN:
        x, y = generate(dataset, n_samples, seed)
        synthetic = True
    else:
        x, y = load_libsvm(dataset)
        synthetic = False
        order = np.random.default_rng(seed).permutation(len(y))   # files are often sorted by class
        x, y = x[order], y[order]
    n_train = int(TRAIN_RATIO * len(y))
    if standardize:
        mean, std = x[:n_train].mean(axis=0), x[:n_train].std(axis=0)
        x = (x - mean) / np.where(std > 0, std, 1.0)
    return Split(x[:n_train], y[:n_train], x[n_train:], y[n_train:], dataset, synthetic)
