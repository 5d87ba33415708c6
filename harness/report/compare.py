"""Case-by-case comparison of two result sets: ratio of medians and a Mann-Whitney U test.

Cases are matched on workload, size and params, and on each of ranks, threads and backend
whose set of values is the same on both sides: so files that differ only in backend
(openblas vs mkl) or in thread count (1 vs 2) compare across that difference.
With the default alpha 0.05 a two-sided Mann-Whitney test needs at least 4 samples per
side to ever reach significance; fewer gives "too few samples".
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import pandas as pd


@dataclass
class Comparison:
    key: str
    baseline_median: float
    candidate_median: float
    ratio: float          # candidate / baseline: > 1 is slower
    p_value: float | None
    verdict: str          # faster, slower, no significant change, too few samples, not comparable


VARYING = ("ranks", "threads", "backend")


def _keys(df: pd.DataFrame, cols: list[str]) -> pd.Series:
    return df[cols].astype(str).agg(" ".join, axis=1)


def compare(base: pd.DataFrame, cand: pd.DataFrame, threshold: float = 0.05,
            alpha: float = 0.05) -> list[Comparison]:
    from scipy.stats import mannwhitneyu

    base = base[base.status == "ok"]
    cand = cand[cand.status == "ok"]
    shared = [c for c in VARYING if set(base[c]) == set(cand[c])]
    differ = [c for c in VARYING if c not in shared]
    cols = ["workload", "size", "params"] + shared
    base = base.assign(key=_keys(base, cols)).drop_duplicates("key", keep="last")
    cand = cand.assign(key=_keys(cand, cols)).drop_duplicates("key", keep="last")
    out = []
    for key, b in base.set_index("key").iterrows():
        if key not in set(cand.key):
            continue
        c = cand.set_index("key").loc[key]
        bs, cs = list(b.samples), list(c.samples)
        ratio = c.median_s / b.median_s if b.median_s else float("nan")
        if min(len(bs), len(cs)) < 4:
            p, verdict = None, "too few samples (need >= 4 repeats per side)"
        else:
            p = float(mannwhitneyu(bs, cs, alternative="two-sided").pvalue)
            if p < alpha and abs(ratio - 1.0) > threshold:
                verdict = "slower" if ratio > 1 else "faster"
            else:
                verdict = "no significant change"
        if bool(b.get("emulated", False)) or bool(c.get("emulated", False)):
            p, verdict = None, "not comparable: emulated timing (binary translation) on one side"
        label = key + "".join(f" ({col} {b[col]} -> {c[col]})" for col in differ)
        out.append(Comparison(label, float(b.median_s), float(c.median_s), float(ratio), p, verdict))
    return out


def as_rows(results: list[Comparison]) -> list[list[str]]:
    return [[r.key, f"{r.baseline_median:.4g}", f"{r.candidate_median:.4g}", f"{r.ratio:.3f}",
             "" if r.p_value is None else f"{r.p_value:.3g}", r.verdict] for r in results]


def as_json(results: list[Comparison]) -> str:
    return json.dumps([r.__dict__ for r in results], indent=2)


COLUMNS = ["case", "baseline median (s)", "candidate median (s)", "ratio", "p (Mann-Whitney)", "verdict"]


def summary(results: list[Comparison]) -> dict[str, Any]:
    counts: dict[str, int] = {}
    for r in results:
        kind = r.verdict.split(" (")[0].split(":")[0]
        counts[kind] = counts.get(kind, 0) + 1
    return counts
