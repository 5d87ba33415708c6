"""Confidence intervals behind verdicts, and the tests behind ``harness compare``.

A verdict is only as good as its interval. Every interval here says how it was made (``method``)
and from how many replicates, so a reader can judge it. The rules:

- one arm (an absolute claim): Student's t-interval on the mean of the replicates
  (``scipy.stats.ttest_1samp``); one replicate of a figure that varies gives no interval;
- a difference of two arms: the paired t-interval on per-replicate differences when both arms
  carry the same replicate ids (same seeds, same splits), else Welch's t-interval
  (``scipy.stats.ttest_ind(equal_var=False)``);
- a ratio of two arms (ratio, speed-up, reduction): Fieller's interval for a ratio of means, with
  the covariance of paired arms; unbounded when the denominator's own interval reaches zero.
  Fieller rather than a bootstrap because claims run on 3 to 10 replicates, where a bootstrap
  interval undercovers;
- an exact figure (declared deterministic): the point itself;
- a proportion (each replicate 0 or 1: a chain that recovered K, or did not): Wilson's score
  interval on the share of successes, which stays inside [0, 1] and is not zero-width at 0 of n or
  n of n (a t-interval on 0/1 values is both: [-1.1, 1.77] for 0, 0, 1; [1, 1] for 1, 1, 1).
  Wilson rather than Clopper-Pearson: its coverage is near the nominal level on average, where
  Clopper-Pearson's is above it and would leave more claims undecided at a few dozen chains;
- a figure with known bounds (Dice, NMI, accuracy in [0, 1]): the interval clipped to the bounds.
  Clipping never removes the true value (it lies within the bounds), so coverage is unchanged;
- repeats from several worker launches (``--launches``): the variance of the mean is the larger of
  the between-launch one (variance of the launch means / launches) and the within one (variance
  of all repeats / repeats), on launches - 1 degrees of freedom: the truncated random-effects
  estimate (max of the two ANOVA mean squares). Both factors are at least those of the interval
  that takes every repeat as independent, so it is never narrower than that one on the same
  samples, and it widens where launches differ (oneDNN's start-up choices, page placement).

``harness compare`` has many samples of skewed timings: there the ratio of medians gets a
bootstrap interval (``scipy.stats.bootstrap``), the Mann-Whitney p-values a Benjamini-Hochberg
correction (``scipy.stats.false_discovery_control``), and each case the smallest change its
samples could have detected (:func:`detectable_ratio`).
"""
from __future__ import annotations

import contextlib
import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

DEFAULT_CONFIDENCE = 0.95
SOURCES = ("repeats", "seeds", "exact")


@dataclass(frozen=True)
class Arm:
    """The replicate values of one metric in one case, and where they come from.

    ``source``: ``repeats`` (the measured repeats are independent replicates: timings, or a
    workload that draws fresh randomness per repeat), ``seeds`` (the workload reports one value
    per seed or split, ``ids`` naming them: the same id in two cases is the same seed and split),
    ``exact`` (a deterministic figure: its interval is the point)."""

    values: tuple[float, ...]
    source: str = "repeats"
    ids: tuple[str, ...] | None = None
    launches: tuple[int, ...] | None = None   # the worker launch of each value (--launches)

    @property
    def launch_count(self) -> int:
        return len(set(self.launches)) if self.launches is not None and len(self.launches) == self.n else 1

    @property
    def n(self) -> int:
        return len(self.values)

    @property
    def mean(self) -> float:
        return float(np.mean(self.values))

    @property
    def exact(self) -> bool:
        return self.source == "exact"


@dataclass(frozen=True)
class Interval:
    """``estimate`` with its two-sided interval ``[low, high]`` at ``confidence`` (a bound may be
    infinite: unbounded), the method in words, and the replicates behind it."""

    estimate: float
    low: float
    high: float
    method: str
    confidence: float
    n: int
    baseline_n: int | None = None
    paired: bool | None = None

    def clipped(self, low: float, high: float) -> Interval:
        """The interval within ``[low, high]`` (a figure that cannot leave its bounds), saying so
        in its method when a bound was cut."""
        lo, hi = max(self.low, low), min(self.high, high)
        if (lo, hi) == (self.low, self.high):
            return self
        return Interval(self.estimate, lo, hi, f"{self.method}, clipped to [{low:g}, {high:g}]", self.confidence,
                        self.n, self.baseline_n, self.paired)

    def mapped(self, f, decreasing: bool = False) -> Interval:
        """The interval of ``f(estimate)`` for a monotone ``f`` (bounds swapped when decreasing)."""
        lo, hi = (f(self.high), f(self.low)) if decreasing else (f(self.low), f(self.high))
        return Interval(f(self.estimate), lo, hi, self.method, self.confidence, self.n, self.baseline_n, self.paired)


@contextlib.contextmanager
def _quiet(category: type[Warning] = RuntimeWarning):
    """scipy's warnings off: about nearly equal data (the interval is then correctly narrow) or a
    degenerate bootstrap (handled by the caller); in a run's output they are noise."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", category)
        yield


def _t_ci(test, confidence: float, *args, **kwargs) -> tuple[float, float]:
    """The confidence interval of the scipy t-test ``test(*args, **kwargs)``."""
    with _quiet():
        ci = test(*args, **kwargs).confidence_interval(confidence)
    return float(ci.low), float(ci.high)


def _t(confidence: float, df: float) -> float:
    from scipy import stats
    return float(stats.t.ppf(0.5 + confidence / 2, df))


def mean_spread(arm: Arm) -> tuple[float, float, str]:
    """(variance of the arm's mean, its degrees of freedom, the replicates in words): the repeats
    as independent, or, over several launches, the larger of the between- and within-launch
    variance on launches - 1 degrees of freedom (module docstring)."""
    x = np.asarray(arm.values, dtype=float)
    within = float(x.var(ddof=1)) / arm.n
    if arm.launch_count < 2:
        return within, arm.n - 1, f"{arm.n} {arm.source}"
    groups = np.asarray(arm.launches)
    means = np.array([x[groups == g].mean() for g in sorted(set(arm.launches or ()))])
    between = float(means.var(ddof=1)) / len(means)
    spread = "between-launch" if between >= within else "within-launch"
    return (max(within, between), len(means) - 1,
            f"{len(means)} launches of {arm.n} {arm.source} in all, {spread} spread")


def _spread_interval(est: float, variance: float, df: float, confidence: float) -> tuple[float, float]:
    half = _t(confidence, df) * math.sqrt(variance)
    return est - half, est + half


def mean_interval(arm: Arm, confidence: float = DEFAULT_CONFIDENCE) -> Interval | None:
    """Student's t-interval on the mean of ``arm``; the point for an exact figure; None for one
    replicate of a figure that varies (nothing can be said about its spread)."""
    m = arm.mean
    if arm.exact:
        return Interval(m, m, m, "exact (declared deterministic)", confidence, arm.n)
    if arm.n < 2:
        return None
    x = np.asarray(arm.values, dtype=float)
    what = f"t-interval over {arm.n} {arm.source}"
    if np.ptp(x) == 0:
        return Interval(m, m, m, what + " (all equal)", confidence, arm.n)
    if arm.launch_count > 1:
        variance, df, words = mean_spread(arm)
        low, high = _spread_interval(m, variance, df, confidence)
        return Interval(m, low, high, f"hierarchical t-interval over {words}", confidence, arm.n)
    from scipy import stats
    low, high = _t_ci(stats.ttest_1samp, confidence, x, 0.0)
    return Interval(m, low, high, what, confidence, arm.n)


def successes(arm: Arm) -> int | None:
    """The number of replicates equal to 1 when every replicate is 0 or 1, else None."""
    if not all(v in (0.0, 1.0) for v in arm.values):
        return None
    return int(sum(arm.values))


def proportion_interval(arm: Arm, confidence: float = DEFAULT_CONFIDENCE) -> Interval | None:
    """Wilson's score interval on the share of replicates that are 1 (``scipy.stats.binomtest``);
    None when there are none or a replicate is neither 0 nor 1."""
    k = successes(arm)
    if k is None or arm.n == 0:
        return None
    from scipy.stats import binomtest
    ci = binomtest(k, arm.n).proportion_ci(confidence_level=confidence, method="wilson")
    return Interval(k / arm.n, float(ci.low), float(ci.high), f"Wilson interval, {k} of {arm.n} {arm.source}",
                    confidence, arm.n)


def paired_ids(a: Arm, b: Arm) -> bool:
    """True when two seed arms name the same replicates (same seeds, same splits): pair them."""
    return (a.source == b.source == "seeds" and a.ids is not None and b.ids is not None
            and len(a.ids) == len(set(a.ids)) and set(a.ids) == set(b.ids))


def _aligned(a: Arm, b: Arm) -> tuple[np.ndarray, np.ndarray]:
    order = {k: i for i, k in enumerate(b.ids or ())}
    bv = np.array([b.values[order[k]] for k in a.ids or ()], dtype=float)
    return np.asarray(a.values, dtype=float), bv


def difference_interval(a: Arm, b: Arm, confidence: float = DEFAULT_CONFIDENCE) -> Interval | None:
    """Interval on mean(a) - mean(b): paired when the arms share replicate ids, Welch otherwise."""
    from scipy import stats
    est = a.mean - b.mean
    if a.exact and b.exact:
        return Interval(est, est, est, "exact (both arms deterministic)", confidence, a.n, b.n)
    if paired_ids(a, b) and a.n >= 2:   # the one-arm interval of the per-seed differences
        x, y = _aligned(a, b)
        d = mean_interval(Arm(tuple(x - y)), confidence)
        assert d is not None
        what = f"paired t-interval over {a.n} shared seeds"
        if d.low == d.high:
            return Interval(est, est, est, what + " (all differences equal)", confidence, a.n, b.n, True)
        return Interval(est, d.low, d.high, what, confidence, a.n, b.n, True)
    if b.exact or a.exact:   # one side is a constant: a one-sample interval on the other, shifted
        noisy, sign = (a, 1.0) if b.exact else (b, -1.0)
        one = mean_interval(noisy, confidence)
        if one is None:
            return None
        shift = -b.mean if b.exact else a.mean
        lo, hi = sorted((sign * one.low + shift, sign * one.high + shift))
        return Interval(est, lo, hi, one.method + " against an exact figure", confidence, a.n, b.n, False)
    if a.n < 2 or b.n < 2:
        return None
    x, y = np.asarray(a.values, dtype=float), np.asarray(b.values, dtype=float)
    what = f"Welch t-interval ({a.n} vs {b.n} {a.source}, unpaired)"
    if np.ptp(x) == 0 and np.ptp(y) == 0:
        return Interval(est, est, est, what + " (no spread)", confidence, a.n, b.n, False)
    if a.launch_count > 1 or b.launch_count > 1:
        (va, dfa, wa), (vb, dfb, wb) = mean_spread(a), mean_spread(b)
        df = (va + vb) ** 2 / sum(v * v / d for v, d in ((va, dfa), (vb, dfb)) if v > 0) if va + vb > 0 else 1e9
        low, high = _spread_interval(est, va + vb, df, confidence)
        return Interval(est, low, high, f"hierarchical Welch t-interval ({wa} vs {wb}, unpaired)", confidence,
                        a.n, b.n, False)
    low, high = _t_ci(stats.ttest_ind, confidence, x, y, equal_var=False)
    return Interval(est, low, high, what, confidence, a.n, b.n, False)


def ratio_interval(a: Arm, b: Arm, confidence: float = DEFAULT_CONFIDENCE) -> Interval | None:
    """Fieller's interval on mean(a) / mean(b), with the covariance of paired arms.

    Unbounded (``-inf, inf``) when mean(b)'s own interval reaches zero: the data cannot then
    bound the ratio. Degrees of freedom: n - 1 paired, Welch-Satterthwaite otherwise."""
    ma, mb = a.mean, b.mean
    if mb == 0:
        return None
    est = ma / mb
    if a.exact and b.exact:
        return Interval(est, est, est, "exact (both arms deterministic)", confidence, a.n, b.n)
    if (not a.exact and a.n < 2) or (not b.exact and b.n < 2):
        return None
    paired = paired_ids(a, b)
    if paired:
        x, y = _aligned(a, b)
        n = a.n
        va, vb = x.var(ddof=1) / n, y.var(ddof=1) / n
        cov = float(np.cov(x, y, ddof=1)[0, 1]) / n
        df = n - 1
    else:
        (va, dfa, wa), (vb, dfb, wb) = ((0.0, 1e9, f"{arm.n} exact") if arm.exact else mean_spread(arm)
                                        for arm in (a, b))
        cov = 0.0
        parts = [(va, dfa), (est * est * vb, dfb)]
        denom = sum(v * v / d for v, d in parts if v > 0)
        df = (va + est * est * vb) ** 2 / denom if denom > 0 else 1e9
    launches = a.launch_count > 1 or b.launch_count > 1
    method = ("Fieller interval, paired over shared seeds" if paired
              else f"hierarchical Fieller interval ({wa} vs {wb}, unpaired)" if launches
              else f"Fieller interval ({a.n} vs {b.n}, unpaired)")
    q = _t(confidence, df)
    qa = q * q
    A = mb * mb - qa * vb
    B = -2.0 * (ma * mb - qa * cov)
    C = ma * ma - qa * va
    disc = B * B - 4 * A * C
    if A <= 0 or disc < 0:
        return Interval(est, -math.inf, math.inf, method + " (unbounded: the baseline's interval reaches 0)",
                        confidence, a.n, b.n, paired)
    root = math.sqrt(max(disc, 0.0))
    lo, hi = sorted(((-B - root) / (2 * A), (-B + root) / (2 * A)))
    return Interval(est, lo, hi, method, confidence, a.n, b.n, paired)


# -- levels ----------------------------------------------------------------------------------------

def bootstrap_medians(samples: np.ndarray, rng: np.random.Generator, draws: int) -> np.ndarray:
    """``draws`` bootstrap medians of ``samples`` at once (one resample per row): the reports'
    intervals over hundreds of machines stay a few array operations, not a Python loop per draw."""
    samples = np.asarray(samples, dtype=float)
    return np.median(samples[rng.integers(0, len(samples), (draws, len(samples)))], axis=1)


def level_text(confidence: float) -> str:
    """A level as people write it: 95%, 98.3%, 99.9%."""
    return f"{100 * confidence:.3g}%"


def per_look_confidence(confidence: float, looks: int) -> float:
    """The level each of ``looks`` interim looks must use so that the chance of any false
    decision over all of them stays within 1 - ``confidence`` (Bonferroni over the looks)."""
    return 1.0 - (1.0 - confidence) / max(1, looks)


# -- harness compare --------------------------------------------------------------------------------

def ratio_of_medians(new: Sequence[float], old: Sequence[float], confidence: float = DEFAULT_CONFIDENCE,
                     seed: int = 0) -> tuple[float, float, float]:
    """median(new) / median(old) with a bootstrap interval (BCa; percentile where BCa is
    degenerate), both samples resampled independently; seeded, so repeatable."""
    from scipy import stats
    x, y = np.asarray(new, dtype=float), np.asarray(old, dtype=float)
    est = float(np.median(x) / np.median(y))
    if len(x) < 2 or len(y) < 2:
        return est, math.nan, math.nan

    def stat(a, b, axis=-1):
        return np.median(a, axis=axis) / np.median(b, axis=axis)

    for method in ("BCa", "percentile"):
        with _quiet(Warning):
            res = stats.bootstrap((x, y), stat, confidence_level=confidence, method=method,
                                  n_resamples=2000, random_state=np.random.default_rng(seed), vectorized=True)
        lo, hi = float(res.confidence_interval.low), float(res.confidence_interval.high)
        if math.isfinite(lo) and math.isfinite(hi):
            return est, lo, hi
    return est, math.nan, math.nan


def mann_whitney_min_p(n1: int, n2: int) -> float:
    """The smallest two-sided p-value an exact Mann-Whitney U test can give at these counts (no
    ties): 2 / C(n1 + n2, n1). With 4 vs 4 repeats it is 0.029, so after a correction over more
    than one case no change at all can be flagged."""
    return min(1.0, 2.0 / math.comb(n1 + n2, n1)) if n1 and n2 else 1.0


def detectable_ratio(new: Sequence[float], old: Sequence[float], alpha: float = 0.05, power: float = 0.8,
                     tests: int = 1, threshold: float = 0.0, sims: int = 400, seed: int = 0) -> float:
    """The smallest slowdown ratio (> 1) that the decision ``harness compare`` makes would flag
    with probability ``power``: a two-sided Mann-Whitney U test at these sample counts, at the
    level Benjamini-Hochberg gives a case that is the only change among ``tests`` (alpha / tests,
    its strictest threshold), and beyond ``threshold``. Found by simulation: log timings drawn
    normal with the two sides' pooled spread, the new side shifted by log(ratio), the ratio
    bisected on common random numbers. inf when no change could ever be flagged (the test's
    smallest p-value at these counts is above the level) or fewer than 2 samples a side."""
    from scipy.stats import mannwhitneyu

    x, y = np.log(np.asarray(new, dtype=float)), np.log(np.asarray(old, dtype=float))
    n1, n2 = len(x), len(y)
    level = alpha / max(1, tests)
    if n1 < 2 or n2 < 2 or mann_whitney_min_p(n1, n2) > level:
        return math.inf
    sd = math.sqrt(((n1 - 1) * x.var(ddof=1) + (n2 - 1) * y.var(ddof=1)) / (n1 + n2 - 2))
    floor = 1.0 + threshold
    if sd == 0:
        return floor
    rng = np.random.default_rng(seed)
    a, b = rng.standard_normal((sims, n1)) * sd, rng.standard_normal((sims, n2)) * sd

    def flagged(log_ratio: float) -> float:
        p = mannwhitneyu(a + log_ratio, b, axis=1, alternative="two-sided", method="exact").pvalue
        return float(np.mean(p <= level))

    lo, hi = 0.0, math.log(1000.0)
    if flagged(hi) < power:
        return math.inf
    for _ in range(30):
        mid = (lo + hi) / 2
        lo, hi = (lo, mid) if flagged(mid) >= power else (mid, hi)
        if hi - lo < 1e-3:
            break
    return max(math.exp(hi), floor)
