"""A rank-count baseline has the cores its claim says (issue 43): the case's total by default,
or its threads per rank; the verdict records how the baseline ran."""
from __future__ import annotations

import pytest

from conftest import make_record
from harness import Claim, Workload
from harness.judging.case import RunIndex
from harness.judging.baseline_rule import baseline_of, is_baseline_for
from harness.plan import Case
from harness.results.record import LaunchInfo, WorkloadInfo

EQUAL = Claim("t", ">=", 1.5, relative_to={"ranks": 1}, transform="speedup")
PER_RANK = Claim("t", ">=", 1.5, relative_to={"ranks": 1}, transform="speedup", cores="per_rank")


def _case(ranks: int, threads: int) -> Case:
    return Case(workload="w", size="smoke", params={}, backend=None, ranks=ranks, threads=threads, repeats=3,
                warmup=0, timeout=60.0, swept={})


def _record(ranks: int, threads: int, seconds: float):
    return make_record(workload=WorkloadInfo("w", "t:w"),
                       launch=LaunchInfo("local", ranks, threads, ["python"]),
                       metric_samples={"t": [seconds, seconds * 1.01, seconds * 0.99]}, metrics={"t": seconds})


def test_a_rank_count_baseline_gets_the_cases_cores_or_its_threads_per_rank() -> None:
    assert baseline_of(_case(2, 1).key, {"ranks": 1}) == ({}, 1, 2)              # 2 x 1 against 1 x 2
    assert baseline_of(_case(4, 2).key, {"ranks": 2}) == ({}, 2, 4)
    assert baseline_of(_case(2, 1).key, {"ranks": 1}, "per_rank") == ({}, 1, 1)  # 2 x 1 against 1 x 1
    assert baseline_of(_case(3, 1).key, {"ranks": 2}) == ({}, 2, None)           # 3 cores do not split over 2
    assert baseline_of(_case(2, 3).key, {"ranks": 1, "threads": 5}) == ({}, 1, 5)  # named: taken as named
    # one rule: a planned case and a stored record of the same case have the same key
    assert _record(1, 2, 1.0).key == _case(1, 2).key
    assert is_baseline_for(_record(1, 2, 1.0).key, _case(2, 1).key, {"ranks": 1})
    assert not is_baseline_for(_record(1, 1, 1.0).key, _case(2, 1).key, {"ranks": 1})
    assert is_baseline_for(_record(1, 1, 1.0).key, _case(2, 1).key, {"ranks": 1}, "per_rank")
    with pytest.raises(ValueError, match="cores"):
        Claim("t", ">=", 1.0, relative_to={"ranks": 1}, transform="speedup", cores="all")


@pytest.mark.parametrize(("claim", "threads", "equal"), [(EQUAL, 2, True), (PER_RANK, 1, False)])
def test_the_verdict_is_judged_on_the_rules_baseline_and_says_how_it_ran(claim, threads, equal) -> None:
    class W(Workload):
        name = "w"
        claims = [claim]

    # both single-rank records are in the run; only the one of the rule's threads is the baseline
    index = RunIndex([_record(1, 2, 4.0), _record(1, 1, 8.0)])
    (verdict,) = index.verdicts(_case(2, 1), W(), _record(2, 1, 2.0))
    assert verdict.measured == pytest.approx(4.0 / 2.0 if threads == 2 else 8.0 / 2.0)
    assert verdict.baseline_launch == {"ranks": 1, "threads": threads, "cores": threads, "case_cores": 2,
                                       "equal_cores": equal, "rule": claim.cores}


def test_a_missing_baseline_names_the_ranks_and_threads_to_add() -> None:
    class W(Workload):
        name = "w"
        claims = [EQUAL]

    index = RunIndex([_record(1, 1, 8.0)])      # 1 x 1: not the 2 cores of the 2 x 1 case
    (verdict,) = index.verdicts(_case(2, 1), W(), _record(2, 1, 2.0))
    assert verdict.status == "not_evaluated" and "--ranks 1 --threads 2" in verdict.reason


def test_dpmm_compares_ranks_of_one_thread_each_and_suite_all_runs_that_baseline() -> None:
    from harness.plan import Overrides, expand, find_suite, read_suite
    from harness.registry import build_registry
    from harness_plugins.dpmm import Dpmm

    (speedup,) = [c for c in Dpmm.claims if c.relative_to == {"ranks": 1}]
    assert speedup.cores == "per_rank" and "threads per rank" in speedup.source
    reg = build_registry()
    cases = expand(read_suite(find_suite("all", reg))["case"], reg, Overrides())
    big = [c for c in cases if c.workload == "dpmm" and c.params["n"] >= 100000 and c.params["application"] == "clustering"]
    assert {(c.ranks, c.threads) for c in big} >= {(1, 1), (2, 1)}
