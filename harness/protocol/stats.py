"""Summary statistics of raw timing samples: robust centre, spread and a bootstrap CI."""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

UNSTABLE_COV = 0.10
BOOTSTRAP_RESAMPLES = 2000


def summarize(samples: Sequence[float], unstable_cov: float = UNSTABLE_COV,
              seed: int = 0) -> dict[str, float | int | bool | list[float] | None]:
    """Median, IQR, 95% bootstrap CI of the median, mean, std, CoV and an ``unstable`` flag.

    The bootstrap is seeded so the same samples always give the same interval.
    With fewer than 3 samples the CI is the sample range and the case is flagged unstable.
    """
    x = np.asarray(samples, dtype=float)
    if x.size == 0:
        return {"n": 0, "median": None, "mean": None, "std": None, "min": None, "max": None,
                "iqr": None, "ci95": None, "cov": None, "unstable": True}
    q25, med, q75 = np.percentile(x, [25, 50, 75])
    mean = float(x.mean())
    std = float(x.std(ddof=1)) if x.size > 1 else 0.0
    cov = std / mean if mean > 0 else 0.0
    if x.size >= 3:
        rng = np.random.default_rng(seed)
        idx = rng.integers(0, x.size, size=(BOOTSTRAP_RESAMPLES, x.size))
        medians = np.median(x[idx], axis=1)
        lo, hi = np.percentile(medians, [2.5, 97.5])
    else:
        lo, hi = x.min(), x.max()
    return {
        "n": int(x.size),
        "median": float(med),
        "mean": mean,
        "std": std,
        "min": float(x.min()),
        "max": float(x.max()),
        "iqr": float(q75 - q25),
        "ci95": [float(lo), float(hi)],
        "cov": float(cov),
        "unstable": bool(x.size < 3 or cov > unstable_cov),
    }


def across_ranks(values: Sequence[float]) -> dict[str, float]:
    """Max, mean, min and imbalance (max/mean - 1) of one figure over ranks."""
    x = np.asarray(values, dtype=float)
    mean = float(x.mean()) if x.size else 0.0
    mx = float(x.max()) if x.size else 0.0
    return {"max": mx, "mean": mean, "min": float(x.min()) if x.size else 0.0,
            "imbalance": (mx / mean - 1.0) if mean > 0 else 0.0}
