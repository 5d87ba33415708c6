"""Three namespace nodes, one rank on each (a module of its own: the two-node cluster of
test_cluster.py is down by the time it starts)."""
from __future__ import annotations

import pytest

from conftest import read_jsonl
from test_cluster import MPI_ENV, slurm_cluster

pytestmark = [pytest.mark.slow, pytest.mark.mpi]


def test_three_nodes_one_rank_each(harness_cli, tmp_path) -> None:
    """psgd_svm with one rank per node on a cluster of three."""
    with slurm_cluster(3):
        r = harness_cli("submit", "--workload", "psgd_svm", "--size", "smoke", "--ranks", "3", "--threads", "1",
                        "--nodes", "3", "--repeats", "2", "--launcher-arg=--mpi=pmi2", "--time", "10", "--wait",
                        "--out", str(tmp_path), env=MPI_ENV, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    (rec,) = read_jsonl(tmp_path / "results.jsonl")
    assert rec["status"] == "ok" and rec["resources"]["hosts"] == ["n1", "n2", "n3"]
    assert sorted(a for p in rec["resources"]["placement"] for a in p["addresses"]) == [
        "10.250.0.11", "10.250.0.12", "10.250.0.13"]
