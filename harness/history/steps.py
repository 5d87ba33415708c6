"""Change points of a series: where its timing steps up or down, with how sure that is.

Candidates come from a penalised piecewise-constant fit of the per-run medians: ruptures' PELT
by default, asv's ``step_detect`` on request (:func:`segments` says why PELT:
``benchmarks/change_points.py`` compares them on seeded series with known steps and
``tests/test_history.py`` holds the choice to its figures). A candidate becomes a
step only when its interval says so: the ratio of the medians after / before, bootstrapped from
each run's samples (the noise within runs) with a run-to-run term read from how the runs scatter
around their segments' levels, so that run-to-run variation widens the interval as it should, and a
history with one run per segment (nothing to read it from) confirms nothing. A step is a slowdown when the whole interval lies
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
        if not (math.isfinite(self.low) and math.isfinite(self.high)):
            what = (f"changed {self.ratio:.3g}x (unconfirmed: no interval; too few samples, or one run a "
                    "segment, so run-to-run variation is unknown)")
        elif self.kind == "speed-up":     # said as a speed-up factor, its interval turned round with it
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


def run_noise(points: list[Point]) -> float:
    """The noise of one run's log median, from the runs themselves: the median over runs of the
    standard error of the median of log samples (1.2533 sd / sqrt(n)); 0 without 2+ samples."""
    errors = [1.2533 * float(np.std(np.log(p.samples), ddof=1)) / math.sqrt(len(p.samples))
              for p in points if len(p.samples) >= 2]
    return float(np.median(errors)) if errors else 0.0


def segments(runs: list[Point], method: str = "pelt") -> list[tuple[int, int]]:
    """[left, right) index ranges of a piecewise-constant fit of the runs' medians.

    ``pelt`` (default): ruptures' PELT on the log medians (l2 cost, penalty 2 sigma^2 ln n). sigma is
    the larger of the within-run error of a median (:func:`run_noise`) and, from 6 runs
    on, the run-to-run noise read from the median absolute difference of successive runs (with fewer
    runs a step would dominate that estimate and hide itself). ``asv``: asv.step_detect's Potts fit.
    On the seeded series of benchmarks/change_points.py, behind the same interval, PELT finds more of
    the small steps (1.1x, 1.25x) than asv's fit, and neither reports a step on series without one
    (the benchmark prints the figures; tests/test_history.py holds them)."""
    n = len(runs)
    if n < 2:
        return [(0, n)]
    medians = [p.median for p in runs]
    if method == "asv":
        from asv.step_detect import detect_steps
        return [(int(left), int(right)) for left, right, *_ in detect_steps(medians, _weights(runs))]
    import ruptures
    y = np.log(np.asarray(medians, dtype=float))
    between = 1.4826 * float(np.median(np.abs(np.diff(y)))) / math.sqrt(2) if n >= 6 else 0.0
    sigma = max(run_noise(runs), between, 1e-3)
    ends = ruptures.Pelt(model="l2", min_size=1, jump=1).fit(y).predict(pen=2 * sigma ** 2 * math.log(n))
    return list(zip([0, *ends[:-1]], ends))


def _draw(points: list[Point], rng: np.random.Generator, n: int, between: float) -> np.ndarray:
    """``n`` bootstrap medians of a segment: each run's samples resampled within it and pooled (the
    noise within runs), times a log-normal factor of sd ``between / sqrt(runs)`` (the run-to-run
    noise of the segment's level)."""
    runs = [np.asarray(p.samples, dtype=float) for p in points]
    k = len(runs)
    if len({len(r) for r in runs}) == 1:          # the usual case, vectorised: n x k runs x m samples
        m = len(runs[0])
        picks = rng.integers(0, m, (n, k, m))
        medians = np.median(np.stack(runs)[np.arange(k)[None, :, None], picks].reshape(n, k * m), axis=1)
    else:
        medians = np.array([np.median(np.concatenate([r[rng.integers(0, len(r), len(r))] for r in runs]))
                            for _ in range(n)])
    return medians * np.exp(rng.normal(0.0, between / math.sqrt(k), n))


def between_runs(runs: list[Point], edges: list[int]) -> float | None:
    """The run-to-run noise (sd of a run's log median beyond what its own samples explain), from the
    spread of the runs around their segment's level: the pooled variance of the log medians within
    segments less the mean within-run variance of a median (method of moments, at least 0). None
    when no segment has two runs: then nothing tells a step from run-to-run variation."""
    y = [math.log(p.median) for p in runs]       # type: ignore[arg-type]
    dof = len(runs) - (len(edges) - 1)
    if dof < 1:
        return None
    ss = sum(float(np.sum((np.asarray(y[a:b]) - np.mean(y[a:b])) ** 2)) for a, b in zip(edges, edges[1:]))
    within = [1.2533 ** 2 * float(np.var(np.log(p.samples), ddof=1)) / len(p.samples)
              for p in runs if len(p.samples) >= 2]
    return math.sqrt(max(0.0, ss / dof - (float(np.mean(within)) if within else 0.0)))


MIN_SAMPLES = 3    # per side: with fewer, a bootstrap has no spread to show and decides nothing


def step_interval(before: list[Point], after: list[Point], confidence: float = 0.95, between: float | None = 0.0,
                  seed: int = 0) -> tuple[float, float, float]:
    """The ratio of pooled medians after / before and its bootstrap percentile interval, with the
    run-to-run noise ``between`` (see :func:`between_runs`); (ratio, nan, nan) when that noise is
    unknown or a side has fewer than MIN_SAMPLES samples: no interval, so never a step."""
    rng = np.random.default_rng(seed)
    est = float(np.median(np.concatenate([p.samples for p in after]))
                / np.median(np.concatenate([p.samples for p in before])))
    if between is None or min(sum(len(p.samples) for p in side) for side in (before, after)) < MIN_SAMPLES:
        return est, math.nan, math.nan
    ratios = _draw(after, rng, BOOTSTRAP, between) / _draw(before, rng, BOOTSTRAP, between)
    alpha = 1 - confidence
    lo, hi = np.quantile(ratios, [alpha / 2, 1 - alpha / 2])
    return est, float(lo), float(hi)


def classify(ratio: float, low: float, high: float, threshold: float) -> str:
    if low > 1 and ratio >= 1 + threshold:
        return "slowdown"
    if high < 1 and ratio <= 1 / (1 + threshold):
        return "speed-up"
    return "unconfirmed"


def _strength(step: Step) -> float:
    """How far a candidate's ratio is from 1 in units of its interval's half-width (log scale); 0
    without an interval."""
    if not (math.isfinite(step.low) and math.isfinite(step.high)) or step.high <= step.low:
        return 0.0
    return abs(math.log(step.ratio)) / (math.log(step.high / step.low) / 2)


def judge_boundaries(runs: list[Point], bounds: list[int], threshold: float = 0.05,
                     confidence: float = 0.95) -> tuple[list[Step], list[Step]]:
    """(steps, unconfirmed candidates) from candidate boundaries (index of the first run after
    each). A boundary the interval does not confirm is no boundary: the weakest such one goes, its
    two segments merge and the rest are judged again, until every one left is confirmed. So a
    slowdown followed by an unconfirmed wobble still reaches the newest run."""
    dropped: list[Step] = []
    while True:
        edges = [0, *bounds, len(runs)]
        between = between_runs(runs, edges)
        steps = []
        for a, b, c in zip(edges, edges[1:], edges[2:]):
            ratio, low, high = step_interval(runs[a:b], runs[b:c], confidence, between)
            steps.append(Step(before=runs[a:b], after=runs[b:c], ratio=ratio, low=low, high=high,
                              kind=classify(ratio, low, high, threshold), newest=c == len(runs)))
        weak = [i for i, st in enumerate(steps) if not st.confirmed]
        if not weak:
            return steps, dropped
        # one at a time, the weakest first: merging two segments changes the judgement of the
        # boundaries beside them (dropping all at once can shift a step onto a neighbour)
        drop = min(weak, key=lambda i: _strength(steps[i]))
        dropped.append(steps[drop])
        bounds = bounds[:drop] + bounds[drop + 1:]


def find_steps(series: Series, threshold: float = 0.05, confidence: float = 0.95,
               method: str = "pelt") -> list[Step]:
    """The steps of ``series`` (its ok runs) and, after them, the candidates their interval did not
    confirm; each explained by what its records say changed between the run before and after it."""
    runs = [p for p in series.points if p.ok]
    if len(runs) < 2:
        return []
    segs = segments(runs, method)
    steps, dropped = judge_boundaries(runs, [left for left, _ in segs[1:]], threshold, confidence)
    for st in steps + dropped:
        st.changed = changes([provenance(p.records[-1]) for p in st.before],
                             [provenance(p.records[0]) for p in st.after])
    return steps + dropped
