"""Each way a case can die costs only that case; the next one still runs and records."""
import pytest

from conftest import read_jsonl


@pytest.mark.slow
@pytest.mark.mpi
def test_raise_abort_hang_and_rank_death_are_isolated(harness_cli, tmp_path) -> None:
    workloads = "fault_raise,probe,fault_abort,fault_hang,fault_rank_death,fault_needs_package,probe"
    r = harness_cli("run", "--workload", workloads, "--timeout", "4", "--repeats", "3",
                    "--out", str(tmp_path), timeout=120)
    assert r.returncode == 1, r.stdout + r.stderr  # some cases failed
    records = read_jsonl(tmp_path / "results.jsonl")
    by_name = {}
    for rec in records:
        by_name.setdefault(rec["workload"]["name"], []).append(rec)
    assert [rec["workload"]["name"] for rec in records] == workloads.split(",")
    raise_ = by_name["fault_raise"][0]
    assert raise_["status"] == "failed" and "ValueError: deliberate failure in run" in raise_["reason"]
    abort = by_name["fault_abort"][0]
    assert abort["status"] == "failed" and "SIGABRT" in abort["reason"]
    hang = by_name["fault_hang"][0]
    assert hang["status"] == "timeout" and "4 s timeout" in hang["reason"]
    assert 3.5 < hang["duration_s"] < 30
    death = by_name["fault_rank_death"][0]
    assert death["status"] == "failed" and death["launch"]["ranks"] == 2
    assert "rank died" in death["reason"] or "status 7" in death["reason"]
    skipped = by_name["fault_needs_package"][0]
    assert skipped["status"] == "skipped" and "no_such_package_xyz" in skipped["reason"]
    assert [rec["status"] for rec in by_name["probe"]] == ["ok", "ok"]
    assert len(records) == 7
