"""kfac's data: a generated 10-class set (labelled synthetic) or scikit-learn's bundled digits.

``synthetic-classes``: scikit-learn's ``make_classification`` (Guyon's design for the NIPS 2003
feature-selection challenge): ``dim`` features, half of them informative and a quarter redundant,
two Gaussian clusters per class on the vertices of a hypercube (class_sep 1.5), and a fraction
``label_noise`` of the labels replaced by random ones. An MLP can learn the rule and also memorise
the noise, so how it is trained (batch, optimizer, smoothing) changes what it generalises: the
setting of the large-batch gap, at 10,000 training rows so that a large batch is at most 10 % of
them. Each seed draws its own fit, validation and test rows from the generated rows (the arms of
one seed share them, so they stay paired): the interval over seeds then carries the test set's
sampling variation as well as the training's, where one shared test set carried training only.
"""
from __future__ import annotations

from typing import Any

import numpy as np

CLASSES = 10


def synthetic_classes(rows: int, dim: int, noise: float, data_seed: int) -> tuple[np.ndarray, np.ndarray]:
    """(x float32 rows x dim, y int64), ``noise`` of the labels redrawn at random."""
    from sklearn.datasets import make_classification
    x, y = make_classification(n_samples=rows, n_features=dim, n_informative=dim // 2, n_redundant=dim // 4,
                               n_classes=CLASSES, n_clusters_per_class=2, flip_y=noise, class_sep=1.5,
                               random_state=data_seed)
    return x.astype(np.float32), y.astype(np.int64)


def make_splits(p: dict[str, Any]) -> tuple[list[dict[str, tuple[np.ndarray, np.ndarray]]], str]:
    """One {fit, val, test} per seed, and the data set's name for the record."""
    if p["dataset"] == "digits":
        from sklearn.datasets import load_digits
        from sklearn.model_selection import train_test_split

        x, y = load_digits(return_X_y=True)
        x = (x / 16.0).astype(np.float32)
        splits = []
        for s in range(p["seeds"]):   # one stratified split per seed: 60 % fit, 15 % validation, 25 % test
            state = p["seed"] + 100 * s
            x_train, x_test, y_train, y_test = train_test_split(x, y, test_size=0.25, stratify=y, random_state=state)
            x_fit, x_val, y_fit, y_val = train_test_split(x_train, y_train, test_size=0.2, stratify=y_train,
                                                          random_state=state)
            splits.append(_normalised(x_fit, y_fit, x_val, y_val, x_test, y_test))
        return splits, "sklearn digits (bundled)"
    n_fit, n_val, n_test = p["train_rows"], p["val_rows"], p["test_rows"]
    x, y = synthetic_classes(n_fit + n_val + n_test, p["dim"], p["label_noise"], p["data_seed"])
    splits = []
    for s in range(p["seeds"]):   # a fresh split per seed: fit, validation and test rows of its own
        order = np.random.default_rng(p["seed"] + 100 * s).permutation(len(y))
        fit, val, test = order[:n_fit], order[n_fit:n_fit + n_val], order[n_fit + n_val:]
        splits.append(_normalised(x[fit], y[fit], x[val], y[val], x[test], y[test]))
    return splits, (f"synthetic-classes (sklearn make_classification, {p['dim']} features, 10 classes, "
                    f"{p['label_noise']:.0%} labels flipped, data seed {p['data_seed']})")


def _normalised(x_fit, y_fit, x_val, y_val, x_test, y_test) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    mean, std = x_fit.mean(axis=0), x_fit.std(axis=0) + 1e-3
    norm = lambda a: ((a - mean) / std).astype(np.float32)  # noqa: E731
    return {"fit": (norm(x_fit), y_fit.astype(np.int64)), "val": (norm(x_val), y_val.astype(np.int64)),
            "test": (norm(x_test), y_test.astype(np.int64))}
