"""harness/testing.py: a workload's claims judged in-process, on the case and on a control."""
from __future__ import annotations

import pytest

from harness import Claim, Control, Param, Workload
from harness.errors import UsageError
from harness.testing import judge_control_once, judge_once


class _Lanes(Workload):
    """Work split over ``lanes``: the figure is exact (no timing), so the verdicts are certain."""

    name = "lanes"
    params = {"lanes": Param(int, default=4, minimum=1), "serial": Param(bool, default=False),
              "broken": Param(bool, default=False)}
    sizes = {"smoke": {}}
    default_size = "smoke"
    variation = {"work_per_lane": "exact", "correct": "exact"}
    claims = [
        Claim("work_per_lane", ">=", 3.0, relative_to={"lanes": 1}, transform="speedup", source="test",
              control=Control({"serial": True}, "no split: each lane does all the work", kind="ablation")),
        Claim("correct", "==", 1, source="test", control=Control({"broken": True}, "a wrong answer")),
        Claim("correct", ">=", 1, source="test", description="needs two ranks to be shown wrong",
              control=Control({"ranks": 2}, "two ranks")),
    ]

    def run(self, ctx):
        p = ctx.params
        return {"work_per_lane": 100.0 if p["serial"] else 100.0 / p["lanes"], "correct": int(not p["broken"])}


def test_every_claim_is_judged_on_the_case_and_a_relative_one_on_its_baseline_run_the_same_way() -> None:
    speedup, exact, other = judge_once(_Lanes(), repeats=2)
    assert speedup.status == "pass" and speedup.measured == pytest.approx(4.0) and speedup.baseline_value == 100.0
    assert exact.status == "pass" and other.status == "pass"


def test_a_claim_fails_under_its_control_and_one_needing_more_ranks_says_so() -> None:
    assert judge_control_once(_Lanes, "speedup of work_per_lane vs lanes=1 >= 3").status == "fail"
    assert judge_control_once(_Lanes(), 1).status == "fail"
    ranks = judge_control_once(_Lanes(), 2)
    assert ranks.status == "not_evaluated" and "needs 2 ranks" in ranks.reason
    with pytest.raises(UsageError, match="has the claims"):
        judge_control_once(_Lanes(), "no such claim")
    with pytest.raises(UsageError, match="needs 2 ranks"):
        judge_once(_Lanes(), params={"ranks": 2})
