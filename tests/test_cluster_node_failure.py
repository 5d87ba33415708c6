"""A node dies mid-step: every process in namespace n2 (its slurmd, the step's slurmstepd and the
rank) is killed with SIGKILL while a two-node case runs. A module of its own, with its own cluster,
since the dead node takes that cluster with it."""
from __future__ import annotations

import subprocess
import time

import pytest

from test_cluster import MPI_ENV, slurm_cluster, wait_for_case_start, wait_for_records

pytestmark = [pytest.mark.slow, pytest.mark.mpi]


def _kill_node(node: str) -> int:
    pids = subprocess.run(["ip", "netns", "pids", node], capture_output=True, text=True).stdout.split()
    subprocess.run(["kill", "-9", *pids], capture_output=True)
    return len(pids)


def test_a_node_killed_mid_step_leaves_a_record_with_the_reason(harness_cli, tmp_path) -> None:
    out = tmp_path / "out"
    with slurm_cluster(2, slurmd_timeout_s=10):    # the node is DOWN ~10 s after it dies
        r = harness_cli("submit", "--workload", "fault_slow", "--param", "seconds=300", "--ranks", "2", "--nodes",
                        "2", "--threads", "1", "--repeats", "1", "--warmup", "0", "--launcher-arg=--mpi=pmi2",
                        "--time", "10", "--out", str(out), env=MPI_ENV)
        assert r.returncode == 0, r.stdout + r.stderr
        wait_for_case_start(out)
        time.sleep(5)                                       # both ranks are in their sleep
        t_kill = time.monotonic()
        assert _kill_node("n2") >= 2                        # slurmd, slurmstepd, the rank, ...
        (rec,) = wait_for_records(out, 240, "the node died")
        took = time.monotonic() - t_kill
    print(f"record {took:.0f} s after the node died: {rec['status']}: {rec['reason']}")
    assert rec["status"] == "failed" and rec["reason"].startswith("interrupted by SIGTERM"), rec["reason"]
    # The SIGTERM looks the same for scancel and a time limit: the reason says what Slurm saw.
    assert "Slurm job" in rec["reason"] and "n2" in rec["reason"], rec["reason"]
    assert rec["duration_s"] < 290                          # ended by the failure, not by the case's end
