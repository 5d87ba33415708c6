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
        if self.kind == "speed-up":     # said as a speed-up factor, its interval turned round with it
            what = f"sped up {1 / self.ratio:.3g}x [{1 / self.high:.3g}, {1 / self.low:.3g}]"
        else:
            what = (f"slowed {self.ratio:.3g}x" if self.kind == "slowdown" else
                    f"changed {self.ratio:.3g}x (unconfirmed)") + f" [{self.low:.3g}, {self.high:.3g}]"
        text = f"{series.label} {what} between run {i} and {j}"
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
    interval, PELT finds more of the small steps (1.1x, 1.25x) than asv's fit, and neither reports a
    step on series without one (the benchmark prints the figures; tests/test_history.py holds them)."""
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


def judge_boundaries(runs: list[Point], bounds: list[int], threshold: float = 0.05,
                     confidence: float = 0.95) -> tuple[list[Step], list[Step]]:
    """(steps, unconfirmed candidates) from candidate boundaries (index of the first run after
    each). A boundary the interval does not confirm is no boundary: its two segments merge and the
    remaining boundaries are judged again on the merged segments, until every one left is
    confirmed. So a slowdown followed by an unconfirmed wobble still reaches the newest run."""
    dropped: list[Step] = []
    while True:
        edges = [0, *bounds, len(runs)]
        steps = []
        for a, b, c in zip(edges, edges[1:], edges[2:]):
            ratio, low, high = step_interval(runs[a:b], runs[b:c], confidence)
            steps.append(Step(before=runs[a:b], after=runs[b:c], ratio=ratio, low=low, high=high,
                              kind=classify(ratio, low, high, threshold), newest=c == len(runs)))
        weak = [st for st in steps if not st.confirmed]
        if not weak:
            return steps, dropped
        dropped.extend(weak)
        bounds = [b for b, st in zip(bounds, steps) if st.confirmed]


def find_steps(series: Series, threshold: float = 0.05, confidence: float = 0.95,
               method: str = "pelt") -> list[Step]:
    """The steps of ``series`` (its ok runs) and, after them, the candidates their interval did not
    confirm; each explained by what its records say changed between the run before and after it."""
    runs = [p for p in series.points if p.ok]
    if len(runs) < 2:
        return []
    segs = segments([p.median for p in runs], _weights(runs), method)   # type: ignore[misc]
    steps, dropped = judge_boundaries(runs, [left for left, _ in segs[1:]], threshold, confidence)
    for st in steps + dropped:
        st.changed = changes([provenance(p.records[-1]) for p in st.before],
                             [provenance(p.records[0]) for p in st.after])
    return steps + dropped
