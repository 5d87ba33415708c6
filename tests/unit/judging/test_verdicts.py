"""harness/judging/verdicts.py in-process: a verdict from where the interval lies, at any level."""
from __future__ import annotations

import pytest

from harness import Claim
from harness.judging.intervals import Arm, Interval
from harness.judging.verdicts import MIN_EQUAL_N, as_arm, decide, judge_arms, rejudge


def test_decide_needs_the_whole_interval_on_one_side() -> None:
    assert decide(Interval(2.0, 1.6, 2.4, "t", 0.95, 5), ">=", 1.5) == "pass"
    assert decide(Interval(1.0, 0.9, 1.1, "t", 0.95, 5), ">=", 1.5) == "fail"
    assert decide(Interval(1.5, 1.2, 1.8, "t", 0.95, 5), ">=", 1.5) == "inconclusive"
    assert decide(Interval(1.0, 1.0, 1.0, "exact", 0.95, 1), "==", 1.0) == "pass"
    assert decide(Interval(2.0, 1.5, 2.5, "t", 0.95, 5), "==", 1.0) == "fail"


def test_rejudging_at_another_level_reuses_the_kept_replicates() -> None:
    claim = Claim("acc", ">=", 0.9)
    verdict = claim.evaluate({"acc": Arm((0.93, 0.95, 0.94, 0.96, 0.92))})
    assert verdict.status == "pass"
    wider = rejudge(verdict, 0.9999)
    assert wider.interval[0] < verdict.interval[0] and wider.replicates == verdict.replicates


def test_equal_replicates_decide_only_from_min_equal_n_and_one_replicate_never() -> None:
    claim = Claim("acc", ">=", 0.9)
    few = judge_arms(claim.evaluate({}), Arm((0.95,) * (MIN_EQUAL_N - 1)), None, 0.95)
    assert few.status == "inconclusive" and "min_equal_n" in few.reason
    assert judge_arms(claim.evaluate({}), Arm((0.95,) * MIN_EQUAL_N), None, 0.95).status == "pass"
    one = claim.evaluate({"acc": 0.99})
    assert one.status == "inconclusive" and one.interval is None


def test_a_speedup_is_judged_on_fieller_s_interval_of_the_two_arms() -> None:
    claim = Claim("t", ">=", 1.5, relative_to={"msf": 1}, transform="speedup")
    verdict = claim.evaluate({"t": [1.0, 1.02, 0.98]}, {"msf": 64}, {"t": [2.0, 2.04, 1.96]})
    assert verdict.status == "pass" and verdict.measured == pytest.approx(2.0)
    assert verdict.interval[0] < 2.0 < verdict.interval[1] and verdict.baseline_replicates == 3


def test_what_counts_as_a_figure() -> None:
    assert as_arm([1, 2.5]).values == (1.0, 2.5)
    assert as_arm(True) is None and as_arm(float("nan")) is None and as_arm([1, "x"]) is None
    assert as_arm(10 ** 400) is None
