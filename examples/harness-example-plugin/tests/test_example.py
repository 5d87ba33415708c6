"""Unit tests of the example workload, in-process with harness.testing: the metrics, the claim
judged as `harness run` judges it, and the claim failing under its control."""
from harness.testing import judge_control_once, judge_once, run_once
from harness_example import BlockMatmul


def test_the_checksum_matches_and_the_compute_phase_is_timed():
    metrics = run_once(BlockMatmul(), size="smoke")
    assert metrics["checksum_ok"] == 1 and metrics["gflops"] > 0
    assert metrics.phases["compute"]["count"] == 1


def test_the_claim_passes_and_fails_under_its_control():
    (verdict,) = judge_once(BlockMatmul(), size="smoke", repeats=3)
    assert verdict.status == "pass", verdict.reason
    assert judge_control_once(BlockMatmul(), "checksum_ok == 1").status == "fail"
