"""Change points of a series: where its timing steps up or down, with how sure that is.

Candidates come from a penalised piecewise-constant fit of the per-run medians: ruptures' PELT
by default, asv's ``step_detect`` on request (:func:`segments` says why PELT:
``benchmarks/change_points.py`` compares them on seeded series with known steps and
``tests/test_history.py`` holds the choice to its figures). A candidate becomes a
step only when its interval says so: the ratio of the medians after / before, with a two-level
bootstrap (runs resampled within each segment, then each run's samples), so that run-to-run
variation widens the interval as it should. A step is a slowdown when the whole interval lies
above 1 and the ratio reaches ``1 + threshold``; a speed-up likewise below; anything else is
reported as a candidate that the interval could not confirm, never as a step.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from harness.history.provenance import Change, changes, provenance
from harness.history.series import Point, Series

BOOTSTRAP = 2000


@dataclass
class Step:
    """A change between two consecutive segments of a series."""

    before: list[Point]
    after: list[Point]
    ratio: float                    # median after / median before: > 1 is slower
    low: float
    high: float
    kind: str                       # "slowdown", "speed-up" or "unconfirmed"
    newest: bool                    # the segment after is the series' newest
    changed: list[Change] = field(default_factory=list)

    @property
    def confirmed(self) -> bool:
        return self.kind != "unconfirmed"

    def describe(self, series: Series) -> str:
        """``roofline[smoke] mkl r1t2 slowed 1.46x [1.40, 1.52] between run 4 and 5; changed then: ...``
        (runs numbered as in the series' table, failed ones included)."""
        i, j = series.points.index(self.before[-1]) + 1, series.points.index(self.after[0]) + 1
        if self.kind == "slowdown":
            what = f"slowed {self.ratio:.3g}x"
        elif self.kind == "speed-up":
            what = f"sped up {1 / self.ratio:.3g}x"
        else:
            what = f"changed {self.ratio:.3g}x (unconfirmed)"
        text = f"{series.label} {what} [{self.low:.3g}, {self.high:.3g}] between run {i} and {j}"
        if not self.changed:
            return text + "; nothing recorded changed then"
        return text + "; changed then: " + "; ".join(c.text() for c in self.changed)


def _weights(points: list[Point]) -> list[float]:
    """1 / (half the width of each run's interval), relative to the median (asv normalises)."""
    widths = []
    for p in points:
        lo, hi = p.interval or (math.nan, math.nan)
        widths.append((hi - lo) / 2 if hi > lo else math.nan)
    fallback = np.nanmedian(widths) if np.isfinite(widths).any() else 1.0
    return [1.0 / (w if math.isfinite(w) and w > 0 else fallback) for w in widths]


METHODS = ("pelt", "asv")


def segments(medians: list[float], weights: list[float] | None = None, method: str = "pelt") -> list[tuple[int, int]]:
    """[left, right) index ranges of a piecewise-constant fit of the run medians.

    ``pelt`` (default): ruptures' PELT on the log medians (l2 cost, penalty 2 sigma^2 ln n, sigma
    from the median absolute difference of successive runs, so the noise sets the bar); ``asv``:
    asv.step_detect's Potts fit. On the seeded series of benchmarks/change_points.py, behind the same
    interval, PELT finds nearly every step of 1.1x and more; asv's misses about half of the 1.1x and
    one in eight of the 1.25x (tests/test_history.py holds these figures)."""
    n = len(medians)
    if n < 2:
        return [(0, n)]
    if method == "asv":
        from asv.step_detect import detect_steps
        return [(int(left), int(right)) for left, right, *_ in detect_steps(medians, weights)]
    import ruptures
    y = np.log(np.asarray(medians, dtype=float))
    sigma = max(1.4826 * float(np.median(np.abs(np.diff(y)))) / math.sqrt(2), 1e-3)
    ends = ruptures.Pelt(model="l2", min_size=1, jump=1).fit(y).predict(pen=2 * sigma ** 2 * math.log(n))
    return list(zip([0, *ends[:-1]], ends))


def _draw(points: list[Point], rng: np.random.Generator, n: int) -> np.ndarray:
    """``n`` bootstrap medians of a segment: runs resampled, then each chosen run's samples."""
    runs = [np.asarray(p.samples, dtype=float) for p in points]
    k = len(runs)
    if len({len(r) for r in runs}) == 1:          # the usual case, vectorised: n x k runs x m samples
        m = len(runs[0])
        chosen = rng.integers(0, k, (n, k))
        picks = rng.integers(0, m, (n, k, m))
        return np.median(np.stack(runs)[chosen[:, :, None], picks].reshape(n, k * m), axis=1)
    out = np.empty(n)
    for b in range(n):
        chosen = rng.integers(0, k, k)
        out[b] = np.median(np.concatenate([runs[j][rng.integers(0, len(runs[j]), len(runs[j]))] for j in chosen]))
    return out


def step_interval(before: list[Point], after: list[Point], confidence: float = 0.95,
                  seed: int = 0) -> tuple[float, float, float]:
    """The ratio of pooled medians after / before and its two-level bootstrap percentile interval."""
    rng = np.random.default_rng(seed)
    est = float(np.median(np.concatenate([p.samples for p in after]))
                / np.median(np.concatenate([p.samples for p in before])))
    ratios = _draw(after, rng, BOOTSTRAP) / _draw(before, rng, BOOTSTRAP)
    alpha = 1 - confidence
    lo, hi = np.quantile(ratios, [alpha / 2, 1 - alpha / 2])
    return est, float(lo), float(hi)


def classify(ratio: float, low: float, high: float, threshold: float) -> str:
    if low > 1 and ratio >= 1 + threshold:
        return "slowdown"
    if high < 1 and ratio <= 1 / (1 + threshold):
        return "speed-up"
    return "unconfirmed"


def find_steps(series: Series, threshold: float = 0.05, confidence: float = 0.95,
               method: str = "pelt") -> list[Step]:
    """Every candidate step of ``series`` (its ok runs), judged by its interval and explained by
    what its records say changed."""
    runs = [p for p in series.points if p.ok]
    if len(runs) < 2:
        return []
    segs = segments([p.median for p in runs], _weights(runs), method)   # type: ignore[misc]
    found = []
    for (l1, r1), (l2, r2) in zip(segs, segs[1:]):
        before, after = runs[l1:r1], runs[l2:r2]
        ratio, low, high = step_interval(before, after, confidence)
        kind = classify(ratio, low, high, threshold)
        prov_before = [provenance(r) for p in before for r in p.records[-1:]]
        prov_after = [provenance(r) for p in after for r in p.records[:1]]
        found.append(Step(before=before, after=after, ratio=ratio, low=low, high=high, kind=kind,
                          newest=r2 == len(runs), changed=changes(prov_before, prov_after)))
    return found
