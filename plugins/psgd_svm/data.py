"""Data for psgd_svm: built-in generated sets shaped like the paper's, or a LIBSVM file.

Generated sets (labelled ``synthetic-*`` in every record), deterministic from ``seed``:

* ``synthetic-gauss2`` (the default): two Gaussian classes with equal priors, means +-mu with
  |mu| = 0.6 along a random direction, and each class its own covariance (eigenvalues log-spaced
  from 1 to 0.1, each class in its own random rotation), 35,000 x 50. A converged linear SVM
  reaches about 0.85 test accuracy: well below 1, well above chance, and its optimum is no simple
  rule (the class-mean difference, what a crude model finds, scores lower), so how far training
  got shows. The class-conditional distributions are not mirror images, so shards that each
  hold one class (``partition=by_label``) pose different problems: what model averaging must
  reconcile. (The linear-teacher sets below are mirror-symmetric: a one-class shard of them is the
  whole problem in disguise, and every method sits at the label-noise ceiling.)

The linear-teacher sets are a teacher with label noise:

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

BUILTIN = {"synthetic-gauss2": 50, "synthetic-ijcnn1": 22, "synthetic-webspam": 254}
PARTITIONS = ("contiguous", "shuffled", "by_label")
GAUSS2_SEPARATION = 0.6     # |mu|: half the distance between the class means
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
    if name == "synthetic-gauss2":
        return _two_gaussians(rng, n_samples, d)
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


def _two_gaussians(rng: np.random.Generator, n: int, d: int) -> tuple[np.ndarray, np.ndarray]:
    y = np.where(rng.random(n) < 0.5, 1.0, -1.0)
    mu = rng.standard_normal(d)
    mu *= GAUSS2_SEPARATION / np.linalg.norm(mu)
    scale = np.sqrt(np.logspace(0.0, -1.0, d))
    x = np.empty((n, d))
    for label in (1.0, -1.0):
        rotation, _ = np.linalg.qr(rng.standard_normal((d, d)))
        rows = y == label
        x[rows] = (rng.standard_normal((int(rows.sum()), d)) * scale) @ rotation.T + label * mu
    return np.ascontiguousarray(x), y


def partition_order(y: np.ndarray, how: str, seed: int) -> np.ndarray:
    """The order of the training rows before they are cut into one contiguous block per rank:
    ``contiguous`` keeps the data's own order (the reference code's blocks of its file),
    ``shuffled`` a seeded permutation, ``by_label`` one class after the other (with two ranks and
    balanced classes each rank sees one class: the shards are as unlike as they can be)."""
    if how == "contiguous":
        return np.arange(len(y))
    if how == "shuffled":
        return np.random.default_rng([seed, 7]).permutation(len(y))
    if how == "by_label":
        return np.argsort(y, kind="stable")
    raise ValueError(f"partition={how!r}: one of {', '.join(PARTITIONS)}")


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
