"""harness/judging/case.py in-process: the run index (a case against its baseline), the time-sliced
downgrade and the evidence a claim is judged on."""
from __future__ import annotations

import pytest

from conftest import make_record
from harness import Claim
from harness.judging.case import RunIndex, judge_claims, record_evidence
from harness.plan import Case
from harness.results.record import LaunchInfo, WorkloadInfo


class _W:
    """The part of a workload judging reads."""
    name = "w"
    variation: dict[str, str] = {}
    claims = [Claim("t", ">=", 1.5, relative_to={"msf": 1}, transform="speedup", when={"msf": (">=", 64)})]


def _case(msf: int) -> Case:
    return Case(workload="w", size="smoke", params={"msf": msf}, backend=None, ranks=2, threads=1, repeats=3,
                warmup=0, timeout=60.0)


def _record(msf: int, seconds: float, **changes):
    fields = {"workload": WorkloadInfo("w", "t:w"), "params": {"msf": msf}, "launch": LaunchInfo("local", 2, 1, ["python"]),
              "metric_samples": {"t": [seconds, seconds * 1.01, seconds * 0.99]}, "metrics": {"t": seconds}}
    return make_record(**{**fields, **changes})


def test_the_index_finds_the_baseline_and_judges_the_case_against_it() -> None:
    index = RunIndex([_record(1, 2.0)])
    (verdict,) = index.verdicts(_case(64), _W(), _record(64, 1.0))
    assert verdict.status == "pass" and verdict.measured == pytest.approx(2.0)
    assert RunIndex().verdicts(_case(64), _W(), _record(64, 1.0))[0].status == "not_evaluated"
    # the baseline itself is not judged against itself
    assert index.verdicts(_case(1), _W(), _record(1, 2.0))[0].status == "not_applicable"


def test_a_time_sliced_case_judges_nothing() -> None:
    index = RunIndex([_record(1, 2.0)])
    record = _record(64, 1.0)
    record.launch.oversubscribed = "4 ranks x 1 thread on 2 CPUs: time-sliced"
    judge_claims(record, _case(64), _W(), index)
    (verdict,) = record.claims
    assert verdict.status == "not_evaluated" and verdict.reason.startswith("4 ranks x 1 thread")
    assert verdict.interval is None and verdict.measured is None
    assert RunIndex([record]).records == []   # nor is it anyone's baseline


def test_record_evidence_takes_the_replicates_the_variation_declares() -> None:
    class Seeds(_W):
        variation = {"acc": "seeds"}

    rec = _record(64, 1.0, replicates={"acc": {"0": 0.9, "1": 0.8}}, metrics={"acc": 0.85})
    arms = record_evidence(rec, Seeds())
    assert arms["acc"].values == (0.9, 0.8) and arms["acc"].ids == ("0", "1")
    assert arms["t"].values == (1.0, 1.01, 0.99)
