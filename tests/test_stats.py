import numpy as np

from harness.protocol.stats import across_ranks, summarize


def test_summary_of_known_samples() -> None:
    s = summarize([1.0, 2.0, 3.0, 4.0, 100.0])
    assert s["n"] == 5
    assert s["median"] == 3.0
    assert s["iqr"] == 2.0  # q75=4, q25=2
    lo, hi = s["ci95"]
    assert 1.0 <= lo <= 3.0 <= hi <= 100.0
    assert s["unstable"] is True  # the outlier makes the CoV large


def test_stable_samples_and_deterministic_ci() -> None:
    x = list(1.0 + 0.001 * np.sin(np.arange(20)))
    a, b = summarize(x), summarize(x)
    assert a == b
    assert a["unstable"] is False
    assert a["cov"] < 0.01


def test_few_samples_flagged_and_empty() -> None:
    assert summarize([1.0, 1.0])["unstable"] is True
    assert summarize([])["median"] is None


def test_across_ranks_imbalance() -> None:
    r = across_ranks([1.0, 3.0])
    assert r == {"max": 3.0, "mean": 2.0, "min": 1.0, "imbalance": 0.5}
