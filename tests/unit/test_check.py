"""harness/check.py in-process: a case against a reference of its kind."""
from __future__ import annotations

import dataclasses

import pytest

from conftest import make_record
from harness.check import Reference, check_record, widened
from harness.results.record import WorkloadInfo


def _run(scale: float, run_id: str, created: str, version: str = "v1"):
    samples = [scale * (1.0 + 0.002 * i) for i in range(10)]
    return make_record(id=f"{run_id:0>32}", run_id=run_id, created=created, samples=samples,
                       workload=WorkloadInfo("w", "t:w", version=version))


def test_pass_fail_and_inconclusive_by_where_the_interval_lies_against_the_tolerance() -> None:
    reference = Reference([_run(1.0, "a", "2026-01-01T00:00:00+00:00")])
    assert check_record(_run(1.02, "b", "2026-01-02T00:00:00+00:00"), reference).status == "pass"
    slow = check_record(_run(1.5, "c", "2026-01-02T00:00:00+00:00"), reference)
    assert slow.status == "fail" and slow.low > 1.1 and slow.reference_runs == ["a"]
    assert check_record(_run(1.1, "d", "2026-01-02T00:00:00+00:00"), reference).status == "inconclusive"
    assert check_record(_run(1.5, "e", "2026-01-02T00:00:00+00:00"), reference, tolerance=0.6).status == "pass"
    other = check_record(_run(1.0, "f", "2026-01-02T00:00:00+00:00", version="v2"), reference)
    assert other.status == "no reference" and "workload version v1" in other.reason
    failed = dataclasses.replace(_run(1.0, "g", "2026-01-02T00:00:00+00:00"), status="failed", reason="boom")
    assert check_record(failed, reference).status == "not ok"


def test_the_spread_between_reference_runs_widens_the_interval() -> None:
    assert widened(1.0, 0.95, 1.05, [1.0], 0.95) == (1.0, 0.95, 1.05)
    ratio, low, high = widened(1.0, 0.95, 1.05, [1.0, 1.2], 0.95)
    assert ratio == 1.0 and low < 0.8 and high > 1.25
    reference = Reference([_run(1.0, "a", "2026-01-01T00:00:00+00:00"), _run(1.25, "b", "2026-01-01T01:00:00+00:00")])
    check = check_record(_run(1.3, "c", "2026-01-02T00:00:00+00:00"), reference)
    assert check.status == "inconclusive" and check.reference_runs == ["a", "b"]
    assert check.ratio == pytest.approx(1.3 / 1.1295, rel=0.02)


def test_claims_whose_verdict_changed_from_the_reference_are_listed() -> None:
    from harness import Claim

    claim = Claim("acc", ">=", 0.9)
    ref = dataclasses.replace(_run(1.0, "a", "2026-01-01T00:00:00+00:00"),
                              claims=[claim.evaluate({"acc": [0.95, 0.96, 0.94, 0.95, 0.97]})])
    new = dataclasses.replace(_run(1.0, "b", "2026-01-02T00:00:00+00:00"),
                              claims=[claim.evaluate({"acc": [0.5, 0.52, 0.51, 0.5, 0.49]})])
    check = check_record(new, Reference([ref]))
    assert check.claims_changed == ["acc >= 0.9: pass -> fail"]
