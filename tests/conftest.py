"""Shared fixtures: the test plugins installed with pip into a private folder, and a CLI runner."""
from __future__ import annotations

import json
import os
import pathlib
import signal
import subprocess
import sys
import time
from collections.abc import Callable

import pytest

from fixtures.hostile_plugins import make_plugin
from harness.hardware.identity import identity
from harness.results.record import BackendInfo, LaunchInfo, ProtocolInfo, Record, Stats, WorkloadInfo

ROOT = pathlib.Path(__file__).resolve().parent.parent
TESTPLUGIN = ROOT / "tests" / "fixtures" / "testplugin"
EXAMPLE_PLUGIN = ROOT / "examples" / "harness-example-plugin"


def pip_install_target(target: pathlib.Path, *projects: pathlib.Path) -> None:
    """Install plugin projects with pip into ``target`` (a folder put on PYTHONPATH), not the venv."""
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps",
                    "--no-build-isolation", "--target", str(target), *map(str, projects)],
                   check=True, capture_output=True)


@pytest.fixture(scope="session")
def plugin_dir(tmp_path_factory: pytest.TempPathFactory) -> pathlib.Path:
    target = tmp_path_factory.mktemp("plugins")
    pip_install_target(target, TESTPLUGIN)
    return target


def default_sigint() -> None:
    """In a child the tests will interrupt: SIGINT back to its default. A shell that starts pytest in
    the background (`cmd &` without job control) ignores SIGINT, the children inherit that, and
    Python then never raises KeyboardInterrupt: a Ctrl-C test would see the run finish instead."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


class Harness:
    """Runs the real ``harness`` command in a child process with the test plugins visible."""

    def __init__(self, pythonpath: list[pathlib.Path]) -> None:
        self.pythonpath = pythonpath

    def env(self, extra: dict[str, str] | None = None) -> dict[str, str]:
        env = dict(os.environ)
        env.pop("COLUMNS", None)    # the width of piped tables is the harness's (160) unless a test sets it
        env["PYTHONPATH"] = os.pathsep.join(map(str, self.pythonpath))
        env.update(extra or {})
        return env

    def __call__(self, *args: str, timeout: float = 300, cwd: pathlib.Path | None = None,
                 env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "harness", *args], env=self.env(env), text=True,
                              capture_output=True, timeout=timeout, cwd=cwd)

    def popen(self, *args: str) -> subprocess.Popen[str]:
        return subprocess.Popen([sys.executable, "-m", "harness", *args], env=self.env(), text=True,
                                preexec_fn=default_sigint,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def signal_when(proc: subprocess.Popen[str], ready: Callable[[], bool], sig: int, never: str,
                wait_s: float = 60) -> str:
    """Send ``sig`` to ``proc`` once ``ready()`` holds (failing with ``never`` if it exits or
    ``wait_s`` pass first) and return its stderr; ``proc`` is killed if anything goes wrong."""
    try:
        end = time.monotonic() + wait_s
        while not ready():
            assert proc.poll() is None and time.monotonic() < end, never
            time.sleep(0.02)
        proc.send_signal(sig)
        return proc.communicate(timeout=60)[1]
    finally:
        if proc.poll() is None:
            proc.kill()


@pytest.fixture(scope="session")
def harness_cli(plugin_dir: pathlib.Path) -> Harness:
    return Harness([plugin_dir])


def read_jsonl(path: pathlib.Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def assert_mlperf_compliant(results: pathlib.Path, at_least: int = 1) -> list[pathlib.Path]:
    """Every MLPerf log of a results folder passes mlperf-logging's compliance checker with the
    harness rulesets; returns the logs (at least ``at_least`` of them)."""
    from harness.protocol.mlperf_log import check

    logs = sorted(results.glob("artifacts/*/mlperf/*.txt"))
    assert len(logs) >= at_least, f"{len(logs)} MLPerf logs under {results}/artifacts, wanted {at_least}"
    for log in logs:
        passed, messages = check(log)
        assert passed, (log, messages)
    return logs


def assert_work_counted(rec: dict, *phases: str) -> None:
    """Each named phase of the record counted its work: flops every repeat, a positive rate (at most
    a plausible 20 TFLOP/s on these CPUs), the precision and how it was counted, as the workload
    declares them (``work_counts``), and a note on where the fractions came from."""
    for name in phases:
        ph = rec["phases"][name]
        assert len(ph["flops_per_repeat"]) == len(rec["samples"]) and min(ph["flops_per_repeat"]) > 0, name
        assert 0 < ph["gflops"] < 2e4 and ph["dtype"] in ("fp32", "fp64") and ph["counted_by"], name
        assert ph["gflops"] == pytest.approx(sum(ph["flops_per_repeat"]) / len(ph["flops_per_repeat"]) / ph["max_s"] / 1e9)
        assert ph["placement_note"], name


def make_record(**changes) -> Record:
    """A small valid record of the current schema; ``changes`` replace top-level fields."""
    rec = Record(
        id="0123456789abcdef", case_id="w[smoke]{}", run_id="r", created="2026-12-02T00:00:00+00:00",
        status="ok", workload=WorkloadInfo("w", "t:w"), size="smoke", params={},
        backend=BackendInfo(requested=None), launch=LaunchInfo("local", 1, 1, ["python"]),
        protocol=ProtocolInfo(repeats=3, warmup=1, unstable_cov=0.1),
        hardware={"arch": "x86_64", "cpu": {}}, software={"python": "3", "harness": "0", "packages": {}},
        samples=[1.0, 1.0, 1.0],
        stats=Stats(n=3, median=1.0, mean=1.0, std=0.0, min=1.0, max=1.0, iqr=0.0, ci95=[1.0, 1.0], cov=0.0,
                    unstable=False))
    for key, value in changes.items():
        setattr(rec, key, value)
    if "identity" not in changes:     # the machine section, as the harness makes it from the hardware
        rec.identity = identity(rec.hardware)
    return rec


@pytest.fixture
def hostile(harness_cli, tmp_path):
    """(add(module, source), run(*args, env=...)): the harness with the test plugins and the
    hostile ones added so far."""
    site = tmp_path / "site"
    site.mkdir()

    def add(module: str, source: str) -> None:
        make_plugin(site, module, source)

    def run(*args: str, env: dict[str, str] | None = None, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        paths = f"{site}{os.pathsep}{harness_cli.env()['PYTHONPATH']}"
        return harness_cli(*args, env={"PYTHONPATH": paths, "COLUMNS": "1000", **(env or {})}, timeout=timeout,
                           cwd=tmp_path)

    return add, run


def _roofline_runs(harness_cli, out: pathlib.Path, n: int, env: dict[str, str]) -> None:
    for _ in range(n):
        r = harness_cli("run", "--workload", "roofline", "--size", "smoke", "--backend", "openblas", "--threads", "1",
                        "--repeats", "10",
                        "--param", "gemm_sizes=256", "--param", "triad_mib=1", "--out", str(out), env=env)
        assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]


@pytest.fixture(scope="session")
def real_series(harness_cli, tmp_path_factory) -> tuple[pathlib.Path, pathlib.Path]:
    """Four runs of roofline[smoke] (one 256 GEMM, a 1 MiB triad, one thread), then four with
    NUMBA_DISABLE_JIT=1 (a debugging switch left on: the triad runs as Python, over 10x slower
    here), each run a separate `harness run` appending to one folder (history's series, and
    check's reference and its slowdown). The effect dwarfs how runs of one setting differ on
    this shared VM, so the test's threshold (3x) can sit between the two: a setting of MKL_CBWR's
    size (1.6-3x) failed here when the VM drifted 1.7x, and with two threads OpenBLAS and numba's
    pools made runs alternate between about 8 and 16-23 ms; one thread keeps them within a few %."""
    if "NUMBA_DISABLE_JIT" in os.environ:
        pytest.skip("NUMBA_DISABLE_JIT is set in this shell: the runs before the change need it unset")
    base = tmp_path_factory.mktemp("history")
    before, after = base / "before", base / "after"
    _roofline_runs(harness_cli, before, 4, {})
    _roofline_runs(harness_cli, after, 4, {"NUMBA_DISABLE_JIT": "1"})
    return before, after
