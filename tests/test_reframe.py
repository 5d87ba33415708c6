"""`harness export-reframe`: the cases as a ReFrame test library, run by ReFrame itself on this
machine (the Slurm partition's run is in test_cluster.py, on the namespace cluster)."""
from __future__ import annotations

import ast
import os
import pathlib
import shutil
import subprocess
import sys

import pytest

from conftest import read_jsonl
from test_check import CASE as ROOFLINE, fresh_reference

pytestmark = pytest.mark.slow
REFRAME = shutil.which("reframe", path=os.path.dirname(sys.executable))
needs_reframe = pytest.mark.skipif(REFRAME is None, reason="reframe-hpc is not installed (pip install 'hpml-harness[reframe]')")


def reframe(lib: pathlib.Path, config: str, prefix: pathlib.Path, *args: str, env: dict | None = None,
            timeout: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run([REFRAME, "-C", str(lib / config), "-c", str(lib / "harness_cases.py"), "-r",
                           "--exec-policy=serial", "--prefix", str(prefix), *args],
                          capture_output=True, text=True, timeout=timeout, cwd=prefix.parent,
                          env={**os.environ, **(env or {})})


def test_the_smoke_suite_becomes_one_parameterised_test_with_references_from_a_reference(
        harness_cli, real_series, tmp_path) -> None:
    before, _ = real_series
    r = harness_cli("export-reframe", str(tmp_path / "lib"), "--reference", str(before))
    assert r.returncode == 0, r.stdout + r.stderr
    text = (tmp_path / "lib" / "harness_cases.py").read_text()
    cases = ast.literal_eval(text.split("CASES = ", 1)[1].split("\n\n\n", 1)[0])
    builtin = {"bragg_unet", "cnn_scaling", "dpmm", "email_transfer", "kfac", "psgd_svm", "roofline", "tf_cnn"}
    assert builtin <= {c["workload"] for c in cases}     # (and the test plugins' workloads, registered here)
    assert len({c["name"] for c in cases}) == len(cases) and all(c["size"] == "smoke" for c in cases)
    dpmm = next(c for c in cases if c["workload"] == "dpmm")
    assert (dpmm["ranks"], dpmm["threads"]) == (2, 1) and dpmm["version"]
    # the series ran roofline with other params: no case of the suite has a reference there, each says why
    assert all(c["reference"] is None and c["no_reference"] for c in cases)
    for name in ("harness_cases.py", "reframe_local.py", "reframe_slurm.py"):
        compile((tmp_path / "lib" / name).read_text(), name, "exec")
    r = harness_cli("export-reframe", str(tmp_path / "one"), *ROOFLINE, "--reference", str(before))
    (case,) = ast.literal_eval((tmp_path / "one" / "harness_cases.py").read_text().split("CASES = ", 1)[1]
                               .split("\n\n\n", 1)[0])
    median, lower, upper, unit = case["reference"]["median_s"]
    rec = read_jsonl(before / "results.jsonl")[0]
    assert unit == "s" and lower is None and 0.1 < upper < 0.5 and 0.5 < median / rec["stats"]["median"] < 2
    assert case["reference"]["throughput"][2] is None and case["reference"]["throughput"][1] < -0.09


@needs_reframe
def test_reframe_runs_a_case_logs_its_figures_and_fails_an_injected_slowdown(harness_cli, tmp_path) -> None:
    reference = fresh_reference(harness_cli, tmp_path / "reference")     # made just before: this VM drifts
    lib = tmp_path / "lib"
    assert harness_cli("export-reframe", str(lib), *ROOFLINE, "--reference", str(reference)).returncode == 0
    r = reframe(lib, "reframe_local.py", tmp_path / "rfm")
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert "PASSED" in r.stdout and "Ran 1/1 test case" in r.stdout
    (log,) = (tmp_path / "rfm" / "perflogs").rglob("HarnessCase.log")
    header, line = log.read_text().splitlines()[:2]
    fields = dict(zip(header.split("|"), line.split("|")))
    assert fields["result"] == "pass" and float(fields["median_s_value"]) > 0 and fields["median_s_unit"] == "s"
    assert float(fields["throughput_value"]) > 0 and fields["throughput_unit"] == "GFLOP/s"
    assert fields["num_tasks"] == "1" and fields["num_cpus_per_task"] == "1"
    (kept,) = (tmp_path / "rfm" / "output").rglob("results.jsonl")     # keep_files: the case's record
    assert read_jsonl(kept)[0]["status"] == "ok" and read_jsonl(kept)[0]["workload"]["name"] == "roofline"
    slow = reframe(lib, "reframe_local.py", tmp_path / "rfm-slow", env={"NUMBA_DISABLE_JIT": "1"})
    assert slow.returncode != 0 and "performance" in (slow.stdout + slow.stderr).lower(), slow.stdout[-3000:]
