"""``--launches N``: a case's repeats from N worker launches, hierarchical intervals between them."""
from __future__ import annotations

import numpy as np

from harness.judging.claims import Claim
from harness.judging.intervals import Arm, mean_interval, ratio_interval

from conftest import read_jsonl


def _launched(rng, mean: float, launches: int, repeats: int, between: float, within: float) -> Arm:
    values, groups = [], []
    for g in range(launches):
        shift = rng.normal(0.0, between)
        values += list(mean * (1 + shift + rng.normal(0.0, within, repeats)))
        groups += [g] * repeats
    return Arm(tuple(values), launches=tuple(groups))


def _width(interval) -> float:
    return interval.high - interval.low


def test_a_timing_ratio_over_launches_is_never_narrower_than_the_within_launch_interval() -> None:
    """Seeded: 200 pairs of arms, 3 launches x 4 repeats each, launch effects from none to large.
    The hierarchical Fieller interval is at least as wide as the one that takes the 12 repeats as
    independent, on the same samples, and much wider where launches differ."""
    rng = np.random.default_rng(7)
    ratios = []
    for trial in range(200):
        between = (0.0, 0.02, 0.1)[trial % 3]
        a, b = (_launched(rng, m, 3, 4, between, 0.02) for m in (2.0, 1.0))
        flat_a, flat_b = Arm(a.values), Arm(b.values)
        nested, flat = ratio_interval(a, b), ratio_interval(flat_a, flat_b)
        assert _width(nested) >= _width(flat) - 1e-12
        assert _width(mean_interval(a)) >= _width(mean_interval(flat_a)) - 1e-12
        assert "hierarchical" in nested.method and "3 launches" in nested.method
        if between == 0.1:
            ratios.append(_width(nested) / _width(flat))
    assert np.median(ratios) > 2.0


def test_launches_cover_the_launch_mean_where_one_launch_does_not() -> None:
    """Launch effects larger than the repeat noise: an interval over one launch's repeats often
    misses the mean over launches; the hierarchical one over 4 launches covers it about as stated."""
    rng = np.random.default_rng(3)
    nested_hits = flat_hits = 0
    for _ in range(200):
        arm = _launched(rng, 1.0, 4, 5, 0.05, 0.01)
        nested_hits += mean_interval(arm).low <= 1.0 <= mean_interval(arm).high
        one = Arm(arm.values[:5])
        flat_hits += mean_interval(one).low <= 1.0 <= mean_interval(one).high
    assert nested_hits / 200 >= 0.90 and flat_hits / 200 < 0.6


def test_a_verdict_keeps_the_launches_and_is_judged_again_the_same_way() -> None:
    from harness.judging.claims import ClaimVerdict
    from harness.judging.verdicts import rejudge

    arm = _launched(np.random.default_rng(1), 1.0, 3, 3, 0.05, 0.01)
    v = Claim("t", ">=", 0.0).evaluate({"t": arm})
    assert v.evidence["launches"] == list(arm.launches) and "hierarchical" in v.interval_method
    again = rejudge(ClaimVerdict.from_json(v.to_json()), 0.95)
    assert again.interval == v.interval


def test_run_with_launches_records_each_samples_launch(harness_cli, tmp_path) -> None:
    r = harness_cli("run", "--workload", "noisy", "--launches", "3", "--repeats", "2", "--out", str(tmp_path))
    assert r.returncode in (0, 1), r.stdout + r.stderr
    assert "launch 3 of 3" in r.stdout
    (rec,) = read_jsonl(tmp_path / "results.jsonl")
    assert rec["sample_launches"] == [0, 0, 1, 1, 2, 2] and rec["protocol"]["launches"] == 3
    assert len(set(rec["metric_samples"]["x"])) == 6          # each launch drew its own repeats
    judged = [c for c in rec["claims"] if c["interval"] is not None]
    assert judged and all("hierarchical t-interval over 3 launches" in c["interval_method"] for c in judged)
    bad = harness_cli("run", "--workload", "noisy", "--launches", "0", "--out", str(tmp_path / "b"))
    assert bad.returncode == 2 and "--launches" in bad.stderr


def test_the_arms_of_a_relative_claim_launch_interleaved_and_say_so(harness_cli, tmp_path) -> None:
    """Two arms of 2 launches each run A B A B (issue 54: a timing ratio's arms minutes apart carry
    the machine's drift between them); each record lists the order, and the claim is judged."""
    r = harness_cli("run", "--workload", "drift", "--param", "arm=b,a", "--repeats", "1", "--out", str(tmp_path))
    assert r.returncode in (0, 1), r.stdout + r.stderr
    assert "interleaved with 1 other case(s)" in r.stdout
    records = {rec["params"]["arm"]: rec for rec in read_jsonl(tmp_path / "results.jsonl")}
    a, b = records["a"], records["b"]
    assert a["status"] == b["status"] == "ok"
    starts = sorted([(t, "a") for t in a["metric_samples"]["started"]] + [(t, "b") for t in b["metric_samples"]["started"]])
    assert [arm for _, arm in starts] == ["a", "b", "a", "b"]   # the baseline first, then alternating
    order = a["protocol"]["launch_order"]
    assert order == b["protocol"]["launch_order"] and len(order) == 4
    assert [o.endswith(f"#{k}") for o, k in zip(order, (1, 1, 2, 2))] == [True] * 4
    assert a["sample_launches"] == b["sample_launches"] == [0, 1]
    (claim,) = [c for c in b["claims"] if c["relative_to"]]
    assert claim["status"] in ("pass", "fail", "inconclusive") and claim["interval"] is not None
    alone = harness_cli("run", "--workload", "drift", "--repeats", "1", "--out", str(tmp_path / "alone"))
    (rec,) = read_jsonl(tmp_path / "alone" / "results.jsonl")
    assert alone.returncode in (0, 1) and rec["protocol"]["launch_order"] == [] and rec["sample_launches"] == [0, 1]
