"""Third-party plugins: the example of docs/plugins.md (installed with pip, run, its controls run) and a copy of
the example as it was written against contract version 1, which must keep working unchanged."""
import ast
import pathlib
import re
import subprocess
import sys

import pytest

from conftest import EXAMPLE_PLUGIN, ROOT, Harness, pip_install_target, read_jsonl

COMPAT_PLUGIN = ROOT / "tests" / "fixtures" / "compat-plugin-v1"


def _guide_blocks(lang: str) -> list[str]:
    """The code blocks of docs/plugins.md's sections on the example and on testing it."""
    text = (ROOT / "docs" / "plugins.md").read_text()
    section = text.split("## The example", 1)[1].split("\n## The contract", 1)[0]
    return re.findall(rf"```{lang}\n(.*?)```", section, flags=re.S)


def test_the_plugin_guide_is_the_example_plugin_byte_for_byte() -> None:
    (toml,) = _guide_blocks("toml")
    module, tests = _guide_blocks("python")
    assert toml == (EXAMPLE_PLUGIN / "pyproject.toml").read_text()
    assert module == (EXAMPLE_PLUGIN / "harness_example" / "__init__.py").read_text()
    assert tests == (EXAMPLE_PLUGIN / "tests" / "test_example.py").read_text()


@pytest.mark.parametrize("plugin", [EXAMPLE_PLUGIN, COMPAT_PLUGIN], ids=["example", "compat-v1"])
def test_plugins_import_only_the_public_contract(plugin: pathlib.Path) -> None:
    for path in plugin.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "harness":
                assert node.module in ("harness", "harness.testing"), f"{path}: imports from {node.module}"
            if isinstance(node, ast.Import):
                assert not any(a.name.startswith("harness.") for a in node.names), path


def _install_and_run(plugin: pathlib.Path, tmp_path: pathlib.Path) -> tuple[Harness, pathlib.Path, list[dict]]:
    """pip-install ``plugin`` into a private folder and run its workload at 1 and 2 ranks."""
    target = tmp_path / "site"
    pip_install_target(target, plugin)
    cli = Harness([target])
    out = tmp_path / "res"
    r = cli("run", "--workload", "example_matmul", "--size", "smoke", "--ranks", "1,2", "--out", str(out))
    assert r.returncode == 0, r.stdout + r.stderr
    records = read_jsonl(out / "results.jsonl")
    assert [rec["status"] for rec in records] == ["ok", "ok"]
    return cli, out, records


@pytest.mark.slow
@pytest.mark.mpi
def test_example_plugin_installs_lists_runs_and_its_claim_fails_under_its_control(tmp_path) -> None:
    cli, out, records = _install_and_run(EXAMPLE_PLUGIN, tmp_path)
    listed = cli("list", "workloads")
    assert listed.returncode == 0
    assert "example_matmul" in listed.stdout and "harness-example-plugin:example" in listed.stdout
    assert all(rec["claims"][0]["status"] == "pass" and rec["claims"][0]["has_control"] for rec in records)
    assert records[1]["comm"]["ops"]["Allreduce"]["calls"] == 2 * records[1]["protocol"]["repeats"]
    assert all(rec["workload"]["throughput"] == {"metric": "gflops", "unit": "GFLOP/s", "fraction_of_peak": None}
               and rec["metrics"]["gflops"] > 0 for rec in records)
    controls = cli("controls", "--workload", "example_matmul", "--out", str(tmp_path / "ctl"))
    assert controls.returncode == 0, controls.stdout + controls.stderr
    assert "1 of 1 claim(s) decided fail under their control" in controls.stdout
    # its own unit tests (docs/plugins.md, "Testing a workload"), against the installed package
    unit = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--rootdir", str(tmp_path),
                           str(EXAMPLE_PLUGIN / "tests")], cwd=tmp_path, env=cli.env(), capture_output=True, text=True)
    assert unit.returncode == 0 and "2 passed" in unit.stdout, unit.stdout + unit.stderr


@pytest.mark.slow
@pytest.mark.mpi
def test_a_plugin_written_against_contract_v1_runs_unchanged(tmp_path) -> None:
    cli, out, records = _install_and_run(COMPAT_PLUGIN, tmp_path)
    for rec in records:
        (claim,) = rec["claims"]
        assert claim["status"] == "pass" and claim["has_control"] is False and claim["passed"] is True
        assert rec["workload"]["throughput"] is None
    report = cli("report", str(out))
    assert report.returncode == 0 and "pass (no control declared)" in report.stdout
    controls = cli("controls", "--workload", "example_matmul", "--out", str(tmp_path / "ctl"))
    assert controls.returncode == 0 and "1 claim(s) declare no control" in controls.stdout
