"""Unit tests of the example workload: run in-process with harness.testing.run_once."""
from harness.testing import run_once
from harness_example import BlockMatmul


def test_the_checksum_matches_and_the_compute_phase_is_timed():
    metrics = run_once(BlockMatmul(), size="smoke")
    assert metrics["checksum_ok"] == 1 and metrics["gflops"] > 0
    assert metrics.phases["compute"]["count"] == 1


def test_the_control_breaks_the_checksum():
    assert run_once(BlockMatmul(), size="smoke", params={"corrupt": True})["checksum_ok"] == 0
