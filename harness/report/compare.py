"""Case-by-case comparison of two result sets that says how sure it is.

Cases are matched on workload, size and params, and on each of ranks, threads and backend
whose set of values is the same on both sides: so files that differ only in backend
(openblas vs mkl) or in thread count (1 vs 2) compare across that difference. A matched case
whose workload version differs (the plugin's code or protocol changed) is listed as not
comparable: its times measure other work.
Per matched case: the ratio of medians (candidate / baseline) with a bootstrap interval, a
two-sided Mann-Whitney U test, and the smallest slowdown that this test, after the correction,
could have flagged at these sample counts and spread (simulated, harness.judging.intervals.detectable_ratio). The
p-values of all matched cases are corrected together (Benjamini-Hochberg at the false-discovery
rate ``fdr``, 5 % by default): with dozens of cases, a per-case test at 5 % would call some
unchanged case slower in most comparisons. A change counts only when it survives the correction
and exceeds ``threshold``. A two-sided Mann-Whitney test needs at least 4 samples per side to
ever reach significance at 5 %; fewer gives "too few samples".
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import pandas as pd

from harness.output import strict_json
from harness.judging.multiplicity import benjamini_hochberg
from harness.judging.intervals import detectable_ratio, mann_whitney_min_p, ratio_of_medians


@dataclass
class Comparison:
    key: str
    baseline_median: float
    candidate_median: float
    ratio: float          # candidate / baseline: > 1 is slower
    p_value: float | None
    verdict: str          # faster, slower, no significant change, too few samples, not comparable
    ratio_low: float | None = None    # bootstrap interval of the ratio at the comparison's level
    ratio_high: float | None = None
    q_value: float | None = None      # Benjamini-Hochberg adjusted p-value over all matched cases
    detectable: float | None = None   # smallest slowdown ratio the test and correction used could flag


VARYING = ("ranks", "threads", "backend")


def _keys(df: pd.DataFrame, cols: list[str]) -> pd.Series:
    return df[cols].astype(str).agg(" ".join, axis=1)


def compare(base: pd.DataFrame, cand: pd.DataFrame, threshold: float = 0.05,
            alpha: float = 0.05) -> list[Comparison]:
    """Every matched case compared; ``alpha`` is the false-discovery rate of the correction
    over all of them (and 1 - ``alpha`` the level of the ratio intervals)."""
    from scipy.stats import mannwhitneyu

    base = base[base.status == "ok"]
    cand = cand[cand.status == "ok"]
    shared = [c for c in VARYING if set(base[c]) == set(cand[c])]
    differ = [c for c in VARYING if c not in shared]
    cols = ["workload", "size", "params"] + shared
    base = base.assign(key=_keys(base, cols)).drop_duplicates("key", keep="last")
    cand = cand.assign(key=_keys(cand, cols)).drop_duplicates("key", keep="last")
    out: list[Comparison] = []
    tested: list[tuple[int, list[float], list[float]]] = []   # (row, candidate samples, baseline samples)
    cand_by_key = cand.set_index("key")
    for key, b in base.set_index("key").iterrows():
        if key not in cand_by_key.index:
            continue
        c = cand_by_key.loc[key]
        bs, cs = list(b.samples), list(c.samples)
        ratio = c.median_s / b.median_s if b.median_s else float("nan")
        label = key + "".join(f" ({col} {b[col]} -> {c[col]})" for col in differ)
        row = Comparison(label, float(b.median_s), float(c.median_s), float(ratio), None, "")
        if bool(b.get("emulated", False)) or bool(c.get("emulated", False)):
            row.verdict = "not comparable: emulated timing (binary translation) on one side"
        elif "version" in b and b.version != c.version:
            row.verdict = f"not comparable: different workload version ({b.version} -> {c.version}): the work differs"
        elif "work_digest" in b and b.work_digest and c.work_digest and b.work_digest != c.work_digest:
            row.verdict = (f"not comparable: the same protocol version, but the work as run differs (digest "
                           f"{b.work_digest} -> {c.work_digest}: the params or the workload's stated facts)")
        elif min(len(bs), len(cs)) < 4:
            row.verdict = "too few samples (need >= 4 repeats per side)"
        else:
            row.p_value = float(mannwhitneyu(bs, cs, alternative="two-sided").pvalue)
            _, lo, hi = ratio_of_medians(cs, bs, 1 - alpha)
            row.ratio_low, row.ratio_high = (None if math.isnan(lo) else lo), (None if math.isnan(hi) else hi)
            tested.append((len(out), cs, bs))
        out.append(row)
    for (i, cs, bs), q in zip(tested, benjamini_hochberg([out[i].p_value for i, _, _ in tested])):
        row = out[i]
        row.q_value = q
        row.detectable = detectable_ratio(cs, bs, alpha, tests=len(tested), threshold=threshold)
        if q <= alpha and abs(row.ratio - 1.0) > threshold:
            row.verdict = "slower" if row.ratio > 1 else "faster"
        elif math.isfinite(row.detectable):
            row.verdict = f"no significant change (could detect a change of {100 * (row.detectable - 1):.0f}% or more)"
        else:
            row.verdict = (f"no significant change (these repeats cannot show any change: at {len(cs)} vs {len(bs)} "
                           f"the smallest Mann-Whitney p is {mann_whitney_min_p(len(cs), len(bs)):.3g}, above "
                           f"{alpha:g}/{len(tested)} that the correction over {len(tested)} case(s) needs; add repeats)")
    return out


def as_rows(results: list[Comparison]) -> list[list[str]]:
    def interval(r: Comparison) -> str:
        return "" if r.ratio_low is None or r.ratio_high is None else f" [{r.ratio_low:.3f}, {r.ratio_high:.3f}]"
    return [[r.key, f"{r.baseline_median:.4g}", f"{r.candidate_median:.4g}", f"{r.ratio:.3f}{interval(r)}",
             "" if r.p_value is None else f"{r.p_value:.3g}", "" if r.q_value is None else f"{r.q_value:.3g}",
             r.verdict] for r in results]


def as_json(results: list[Comparison]) -> str:
    return strict_json.dumps([r.__dict__ for r in results], indent=2)


COLUMNS = ["case", "baseline median (s)", "candidate median (s)", "ratio [interval]", "p (Mann-Whitney)",
           "q (Benjamini-Hochberg)", "verdict"]


def summary(results: list[Comparison]) -> dict[str, Any]:
    counts: dict[str, int] = {}
    for r in results:
        kind = r.verdict.split(" (")[0].split(":")[0]
        counts[kind] = counts.get(kind, 0) + 1
    return counts
