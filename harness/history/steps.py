"""Change points of a series: where its timing steps up or down, with how sure that is.

Candidates come from a penalised piecewise-constant fit of the per-run medians: ruptures' PELT
by default, asv's ``step_detect`` on request (:func:`segments` says why PELT:
``benchmarks/change_points.py`` compares them on seeded series with known steps and
``tests/test_history.py`` holds the choice to its figures). A candidate becomes a step only when
its interval says so: the ratio of the runs' (geometric) mean medians after / before, with an
interval from how the runs of its two segments scatter (so run-to-run variation widens it, and a
boundary with one run a side, where nothing measures that variation, confirms nothing). Two
things make that interval honest where a textbook one is not:

* the fit put the boundary where the runs differ most, so its difference is the largest of many:
  the interval's width comes from the largest t statistic over every place of its window in
  runs without a step (:func:`scan_critical`, a max-t interval), not from one fixed place;
* one command judges every candidate of every series it reads, and its exit status is a CI gate
  that fails on any confirmed slowdown: the level is family-wise (:func:`family_confidence`,
  Bonferroni over the candidates), so the chance that a command confirms any false step stays
  at most ``1 - confidence`` however many series it reads.

A step is a slowdown when the whole interval lies above 1 and the ratio reaches
``1 + threshold``; a speed-up likewise below; anything else is reported as a candidate that the
interval could not confirm, never as a step.
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field

import numpy as np

from harness.history.provenance import Change, changes, provenance
from harness.history.series import Point, Series
from harness.judging.intervals import DEFAULT_CONFIDENCE

SCAN_SIMULATIONS = 20_000     # at 95 %; more at family-wise levels, up to MAX_SCAN_VALUES numbers
MAX_SCAN_VALUES = 20_000_000
MIN_SCAN_SIMULATIONS = 2_000


def family_confidence(confidence: float, candidates: int) -> float:
    """The level each of ``candidates`` candidates is judged at so that the chance of any false
    step among them is at most ``1 - confidence`` (Bonferroni: conservative where candidates are
    correlated, and exact enough for a gate)."""
    return 1 - (1 - confidence) / max(1, candidates)


def _max_t(y: np.ndarray) -> np.ndarray:
    """Per row of ``y`` (runs without a step), the largest |t| of a two-segment split over every
    place: difference of the segments' means over its standard error from the pooled residuals."""
    n = y.shape[1]
    k = np.arange(1, n)
    csum, csq = np.cumsum(y, axis=1), np.cumsum(y * y, axis=1)
    left, right = csum[:, :-1] / k, (csum[:, -1:] - csum[:, :-1]) / (n - k)
    ss = csq[:, -1:] - k * left ** 2 - (n - k) * right ** 2
    se = np.sqrt(np.maximum(ss, 1e-300) / (n - 2) * (1 / k + 1 / (n - k)))
    return (np.abs(left - right) / se).max(axis=1)


@functools.lru_cache(maxsize=512)
def scan_critical(n_runs: int, confidence: float) -> float:
    """The ``confidence`` quantile of the largest |t| over the ``n_runs - 1`` places a boundary can
    take in a window of ``n_runs`` runs without a step (independent normal log medians; seeded
    simulation, cached). A boundary the fit chose is judged against it: on seeded series without a
    step, a fixed-place interval (the t or bootstrap interval of one split) confirmed false steps
    well beyond its level. Needs ``n_runs >= 3`` (one residual degree of freedom)."""
    tail = 1 - confidence
    # about 50 beyond the quantile; within MAX_SCAN_VALUES normal draws (a window of thousands of
    # runs gets fewer simulations, never under MIN_SCAN_SIMULATIONS)
    sims = int(max(MIN_SCAN_SIMULATIONS, min(max(SCAN_SIMULATIONS, math.ceil(50 / tail)), MAX_SCAN_VALUES // n_runs)))
    rng = np.random.default_rng(12345)
    chunk = max(1, 2_000_000 // n_runs)
    peaks = np.concatenate([_max_t(rng.standard_normal((min(chunk, sims - i), n_runs))) for i in range(0, sims, chunk)])
    return float(np.quantile(peaks, confidence))


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
            what = (f"changed {self.ratio:.3g}x (unconfirmed: no interval; one run on each side, so "
                    "run-to-run variation is unknown)")
        elif self.kind == "unconfirmed" and len(self.before) + len(self.after) == 3:
            what = (f"changed {self.ratio:.3g}x (unconfirmed: {len(self.before)}+{len(self.after)} runs say almost "
                    f"nothing of run-to-run variation (one degree of freedom), so the interval spans "
                    f"[{self.low:.2g}, {self.high:.2g}]; more runs a side decide)")
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
    y = np.log(np.asarray(medians, dtype=float))
    between = 1.4826 * float(np.median(np.abs(np.diff(y)))) / math.sqrt(2) if n >= 6 else 0.0
    sigma = max(run_noise(runs), between, 1e-3)
    ends = [int(e) for e in pelt_l2(y, 2 * sigma ** 2 * math.log(n))]
    return list(zip([0, *ends[:-1]], ends))


def pelt_l2(y: np.ndarray, penalty: float) -> list[int]:
    """PELT with the l2 cost (the ends of the segments, the last one ``len(y)``), through ruptures'
    C implementation: KernelCPD with the linear kernel is that same cost (the same boundaries as
    ``ruptures.Pelt(model="l2")``, which tests/test_history.py checks), in C: ruptures' Python PELT
    grows as the square of the runs and made a year of nightly history take seconds per series
    (benchmarks/change_points.py measures both)."""
    import ruptures
    return ruptures.KernelCPD(kernel="linear", min_size=1, jump=1).fit(np.asarray(y, dtype=float)).predict(pen=penalty)


def step_interval(before: list[Point], after: list[Point], confidence: float = DEFAULT_CONFIDENCE) -> tuple[float, float, float]:
    """The ratio of the runs' geometric mean medians after / before and its max-t interval: the
    difference of mean log medians, plus or minus :func:`scan_critical` for the window's runs
    times its standard error (the two segments' pooled scatter, never below the runs' own
    within-run error). (ratio, nan, nan) with one run a side: nothing measures run-to-run
    variation, so no interval and never a step."""
    y1 = np.log([p.median for p in before])
    y2 = np.log([p.median for p in after])
    d = float(np.mean(y2) - np.mean(y1))
    n = len(y1) + len(y2)
    if n < 3:
        return _exp(d), math.nan, math.nan
    s2 = (float(np.sum((y1 - y1.mean()) ** 2)) + float(np.sum((y2 - y2.mean()) ** 2))) / (n - 2)
    s2 = max(s2, run_noise(before + after) ** 2)   # known from many samples even when few runs are
    half = scan_critical(n, confidence) * math.sqrt(s2 * (1 / len(y1) + 1 / len(y2)))
    return _exp(d), _exp(d - half), _exp(d + half)


def _exp(x: float) -> float:
    """exp that saturates (to inf, or 0) instead of raising: an interval of a few runs at a
    family-wise level can be wider than a float's range, which means only "undecided"."""
    return math.exp(x) if x < 709.0 else math.inf


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
                     confidence: float = DEFAULT_CONFIDENCE) -> tuple[list[Step], list[Step]]:
    """(steps, unconfirmed candidates) from candidate boundaries (index of the first run after
    each). A boundary the interval does not confirm is no boundary: the weakest such one goes, its
    two segments merge and the rest are judged again, until every one left is confirmed. So a
    slowdown followed by an unconfirmed wobble still reaches the newest run."""
    dropped: list[Step] = []
    while True:
        edges = [0, *bounds, len(runs)]
        steps = []
        for a, b, c in zip(edges, edges[1:], edges[2:]):
            ratio, low, high = step_interval(runs[a:b], runs[b:c], confidence)
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


def candidates(series: Series, method: str = "pelt") -> list[int]:
    """The candidate boundaries of ``series``: the index, among its ok runs, of the first run after
    each step of the change-point fit."""
    runs = [p for p in series.points if p.ok]
    return [left for left, _ in segments(runs, method)[1:]] if len(runs) >= 2 else []


def find_steps(series: Series, threshold: float = 0.05, confidence: float = DEFAULT_CONFIDENCE,
               method: str = "pelt", bounds: list[int] | None = None) -> list[Step]:
    """The steps of ``series`` (its ok runs) and, after them, the candidates their interval did not
    confirm; each explained by what its records say changed between the run before and after it.
    ``confidence`` is the level of each candidate's interval (:func:`family_confidence` makes it
    family-wise); ``bounds``: :func:`candidates`, if already found."""
    runs = [p for p in series.points if p.ok]
    if len(runs) < 2:
        return []
    steps, dropped = judge_boundaries(runs, candidates(series, method) if bounds is None else bounds,
                                      threshold, confidence)
    for st in steps + dropped:
        st.changed = changes([provenance(p.records[-1]) for p in st.before],
                             [provenance(p.records[0]) for p in st.after])
    return steps + dropped
