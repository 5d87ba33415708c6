"""The README's example plugin, installed with pip, is found and runs with no change to the core."""
import pytest

from conftest import EXAMPLE_PLUGIN, Harness, pip_install_target, read_jsonl


@pytest.mark.slow
def test_example_plugin_installs_lists_and_runs(tmp_path) -> None:
    target = tmp_path / "site"
    pip_install_target(target, EXAMPLE_PLUGIN)
    cli = Harness([target])
    listed = cli("list", "workloads")
    assert listed.returncode == 0
    assert "example_matmul" in listed.stdout and "harness-example-plugin:example" in listed.stdout
    out = tmp_path / "res"
    r = cli("run", "--workload", "example_matmul", "--size", "smoke", "--ranks", "1,2", "--out", str(out))
    assert r.returncode == 0, r.stdout + r.stderr
    records = read_jsonl(out / "results.jsonl")
    assert [rec["status"] for rec in records] == ["ok", "ok"]
    assert all(rec["claims"][0]["passed"] is True for rec in records)
    assert records[1]["comm"]["ops"]["Allreduce"]["calls"] == 2 * records[1]["protocol"]["repeats"]
