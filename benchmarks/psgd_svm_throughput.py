"""Single-rank samples/s of psgd_svm's compiled Pegasos against scikit-learn's SGDClassifier.

    python benchmarks/psgd_svm_throughput.py [--epochs 10] [--n 35000]

Same generated data (synthetic-ijcnn1, 80% train), same number of epochs, no shuffling,
interleaved rounds in one run; the ratio of medians is the figure to read.
"""
from __future__ import annotations

import argparse
import statistics
import time
import warnings

import numpy as np


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--epochs", type=int, default=10)
    ap.add_argument("--n", type=int, default=35000)
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()

    from sklearn.exceptions import ConvergenceWarning
    from sklearn.linear_model import SGDClassifier

    from harness_plugins.psgd_svm.data import load
    from harness_plugins.psgd_svm.model import accuracy, sequential_train

    split = load("synthetic-ijcnn1", args.n, seed=0)
    x, y = split.x_train, split.y_train
    lam = 0.001
    w0 = np.random.default_rng(0).random(x.shape[1])
    sequential_train(x[:10], y[:10], w0, 1, lam, "pegasos")  # compile
    ours, theirs, acc = [], [], {}
    for _ in range(args.rounds):
        t0 = time.perf_counter()
        w = sequential_train(x, y, w0, args.epochs, lam, "pegasos")
        ours.append(len(y) * args.epochs / (time.perf_counter() - t0))
        acc["psgd_svm (numba Pegasos)"] = accuracy(w, split.x_test, split.y_test)
        clf = SGDClassifier(loss="hinge", alpha=lam, max_iter=args.epochs, tol=None, shuffle=False,
                            learning_rate="optimal", random_state=0)
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            clf.fit(x, y)
        theirs.append(len(y) * args.epochs / (time.perf_counter() - t0))
        acc["sklearn SGDClassifier(hinge)"] = clf.score(split.x_test, split.y_test)
    a, b = statistics.median(ours), statistics.median(theirs)
    print(f"data: synthetic-ijcnn1 {len(y)} x {x.shape[1]}, {args.epochs} epochs, {args.rounds} rounds")
    print(f"psgd_svm Pegasos kernel: {a:,.0f} samples/s  (test acc {acc['psgd_svm (numba Pegasos)']:.4f})")
    print(f"SGDClassifier(hinge):    {b:,.0f} samples/s  (test acc {acc['sklearn SGDClassifier(hinge)']:.4f})")
    print(f"ratio ours/sklearn: {a / b:.2f}")


if __name__ == "__main__":
    main()
