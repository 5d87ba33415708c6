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


def generated(path: pathlib.Path, name: str) -> object:
    """The value a generated file gives ``name``: ``json.loads`` of a string literal (data, never
    code), read here without running the file."""
    import json

    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.Assign) and [t.id for t in node.targets if isinstance(t, ast.Name)] == [name]:
            call = node.value
            assert isinstance(call, ast.Call) and ast.unparse(call.func) == "json.loads", ast.unparse(call)
            (arg,) = call.args
            assert isinstance(arg, ast.Constant) and isinstance(arg.value, str)
            return json.loads(arg.value)
    raise AssertionError(f"{name} is not assigned in {path}")


def test_the_smoke_suite_becomes_one_parameterised_test_with_references_from_a_reference(
        harness_cli, real_series, tmp_path) -> None:
    before, _ = real_series
    r = harness_cli("export-reframe", str(tmp_path / "lib"), "--reference", str(before))
    assert r.returncode == 0, r.stdout + r.stderr
    cases = generated(tmp_path / "lib" / "harness_cases.py", "CASES")
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
    (case,) = generated(tmp_path / "one" / "harness_cases.py", "CASES")
    median, lower, upper, unit = case["reference"]["median_s"]
    rec = read_jsonl(before / "results.jsonl")[0]
    assert unit == "s" and lower is None and 0.1 < upper < 0.5 and 0.5 < median / rec["stats"]["median"] < 2
    assert case["reference"]["throughput"][2] is None and case["reference"]["throughput"][1] < -0.09


@needs_reframe
def test_reframe_runs_a_case_logs_its_figures_and_fails_an_injected_slowdown(harness_cli, tmp_path) -> None:
    reference = fresh_reference(harness_cli, tmp_path / "reference")
    lib = tmp_path / "lib"
    # tolerance 2 (3x the reference's time still passes): a busy shared machine never fails the pass
    # half, and the injected slowdown (numba's JIT off: about 18x here) still fails
    assert harness_cli("export-reframe", str(lib), *ROOFLINE, "--reference", str(reference),
                       "--tolerance", "2").returncode == 0
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


HOSTILE_FILE = "d$(touch${IFS}X)`touch${IFS}Y`;touch${IFS}Z;.svm"    # a LIBSVM file's name: three commands


@needs_reframe
def test_a_library_from_hostile_paths_params_and_launcher_args_runs_no_code(harness_cli, tmp_path) -> None:
    """Issue 55: the suite path, the reference path, a --param value (an existing LIBSVM file whose
    name is shell code) and a --launcher-arg are data in the generated files: `reframe -l` and
    `reframe -r` over them create no canary file anywhere under the test's folder."""
    import random

    escape = '"""+str(__import__("os").system("touch CANARY"))+"""'
    suite = tmp_path / ("s" + escape) / "one.toml"
    suite.parent.mkdir()
    suite.write_text('[[case]]\nworkload = "psgd_svm"\nsize = "smoke"\n')
    data = tmp_path / HOSTILE_FILE
    rng = random.Random(0)
    data.write_text("".join(f"{y} 1:{y * 0.5 + rng.gauss(0, 1):.3f} 2:{rng.gauss(0, 1):.3f}\n"
                            for y in (rng.choice((-1, 1)) for _ in range(400))))
    reference = tmp_path / ("r" + escape)
    r = harness_cli("run", "--workload", "psgd_svm", "--size", "smoke", "--param", f"dataset={data}",
                    "--out", str(reference))
    assert r.returncode == 0, r.stderr[-2000:]
    lib = tmp_path / "lib"
    r = harness_cli("export-reframe", str(lib), "--suite", str(suite), "--param", f"dataset={data}",
                    "--reference", str(reference), "--tolerance", "5",
                    "--launcher-arg=--comment=$(touch W)`touch V`", cwd=tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    for name in ("harness_cases.py", "reframe_local.py", "reframe_slurm.py"):
        compile((lib / name).read_text(), name, "exec")
    assert generated(lib / "harness_cases.py", "LAUNCHER_ARGS") == ["--comment=$(touch W)`touch V`"]
    env = harness_cli.env()     # the test plugins and the venv, as a user's shell would have them
    listed = subprocess.run([REFRAME, "-C", str(lib / "reframe_local.py"), "-c", str(lib / "harness_cases.py"), "-l"],
                            capture_output=True, text=True, timeout=300, cwd=tmp_path, env=env)
    assert listed.returncode == 0 and "Found 1 check(s)" in listed.stdout, listed.stdout[-2000:] + listed.stderr
    ran = reframe(lib, "reframe_local.py", tmp_path / "rfm", env=env)
    assert "Ran 1/1 test case" in ran.stdout, ran.stdout[-3000:] + ran.stderr[-2000:]
    (kept,) = (tmp_path / "rfm" / "output").rglob("results.jsonl")
    (record,) = read_jsonl(kept)
    assert record["status"] == "ok" and record["params"]["dataset"] == str(data)    # the file, by its real name
    canaries = [p for p in tmp_path.rglob("*") if p.name in ("CANARY", "X", "Y", "Z", "W", "V")]
    assert not canaries, canaries
