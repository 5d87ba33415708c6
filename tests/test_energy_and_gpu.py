"""Energy per case with the method stated, GPU evidence from NVML, and the cuda backend refusing
cleanly where there is no GPU. A test double of the NVML binding (tests/fixtures/fake_nvml: one
"NVIDIA H200" drawing a constant 400 W) stands in for a GPU node; nothing here needs one."""
from __future__ import annotations

import json
import pathlib
import subprocess
import sys

import pytest

from conftest import read_jsonl
from harness.protocol.energy import Counter, EnergyMeter, energy_meter, rapl_counters

FAKE_NVML = pathlib.Path(__file__).parent / "fixtures" / "fake_nvml"


def _no_real_nvml() -> bool:
    return subprocess.run([sys.executable, "-c", "import pynvml; pynvml.nvmlInit()"],
                          capture_output=True).returncode != 0


def test_without_counters_the_record_says_energy_is_not_measurable(harness_cli, tmp_path) -> None:
    if pathlib.Path("/sys/class/powercap/intel-rapl:0/energy_uj").exists() or not _no_real_nvml():
        pytest.skip("this machine has an energy counter")
    r = harness_cli("run", "--workload", "fault_slow", "--param", "seconds=0.01", "--repeats", "2",
                    "--warmup", "0", "--out", str(tmp_path))
    assert r.returncode == 0, r.stderr
    (rec,) = read_jsonl(tmp_path / "results.jsonl")
    energy = rec["resources"]["energy"]
    assert energy["method"] is None and energy["median_j"] is None
    assert energy["reason"].startswith("energy: not measurable here (no RAPL powercap") and "NVML" in energy["reason"]
    report = harness_cli("report", str(tmp_path))
    assert "energy: not measurable here" in report.stdout


def test_fake_nvml_gives_energy_per_case_and_the_gpu_in_the_fingerprint(harness_cli, tmp_path) -> None:
    env = {"PYTHONPATH": f"{FAKE_NVML}:{harness_cli.env()['PYTHONPATH']}", "FAKE_NVML_WATTS": "400"}
    r = harness_cli("run", "--workload", "fault_slow", "--param", "seconds=0.2", "--repeats", "3",
                    "--warmup", "0", "--out", str(tmp_path), env=env)
    assert r.returncode == 0, r.stderr
    (rec,) = read_jsonl(tmp_path / "results.jsonl")
    energy = rec["resources"]["energy"]
    assert "NVML total-energy counter of 1 GPU" in energy["method"] and "rank 0" in energy["method"]
    joules = energy["per_counter"]["nvml:gpu0"]
    assert len(joules) == 3
    for j, seconds in zip(joules, rec["samples"]):
        assert j == pytest.approx(400 * seconds, rel=0.1, abs=1.0)   # 400 W for the repeat's length
    (gpu,) = rec["hardware"]["gpus"]
    assert gpu["name"] == "NVIDIA H200" and gpu["source"] == "nvml" and gpu["power_limit_w"] == 700
    assert gpu["cuda_driver"] == "13.0" and gpu["memory"] == "143771 MiB"
    assert rec["profile"]["name"] == "h200-sxm"
    report = harness_cli("report", str(tmp_path), env=env)
    assert " J" in report.stdout and "not measurable" not in report.stdout


def test_rapl_counters_read_joules_and_survive_a_wrap(tmp_path) -> None:
    zone = tmp_path / "intel-rapl:0"
    sub = tmp_path / "intel-rapl:0:0"          # a subzone (core): not counted twice
    for d in (zone, sub):
        d.mkdir()
        (d / "energy_uj").write_text("999000000\n")
        (d / "max_energy_range_uj").write_text("1000000000\n")
        (d / "name").write_text("package-0\n" if d == zone else "core\n")
    counters, why = rapl_counters(tmp_path)
    assert why == "" and [c.name for c in counters] == ["rapl:package-0"]
    meter = EnergyMeter(counters, "rapl")
    meter.start()
    (zone / "energy_uj").write_text("2000000\n")   # wrapped past 1000 J: 1 J + 2 J used
    meter.stop()
    assert meter.result()["joules_per_repeat"] == [pytest.approx(3.0)]
    assert rapl_counters(tmp_path / "absent") == ([], "no RAPL powercap")


def test_the_meter_sums_counters_per_repeat() -> None:
    values = iter([10.0, 25.0, 25.0, 45.0])
    c = Counter("x", lambda: next(values))
    meter = EnergyMeter([c], "test")
    for _ in range(2):
        meter.start()
        meter.stop()
    assert meter.result()["joules_per_repeat"] == [15.0, 20.0]


def test_energy_meter_states_why_it_is_absent(tmp_path) -> None:
    if not _no_real_nvml():
        pytest.skip("this machine has NVML")
    meter, why = energy_meter(tmp_path / "no-powercap")
    assert meter is None and why["method"] is None and "no RAPL powercap" in why["reason"]


def test_the_cuda_backend_refuses_cleanly_without_a_gpu(harness_cli, tmp_path) -> None:
    if pathlib.Path("/dev/nvidia0").exists():
        pytest.skip("this machine has a GPU")
    r = harness_cli("run", "--workload", "fault_slow", "--backend", "cuda", "--repeats", "1", "--warmup", "0",
                    "--out", str(tmp_path))
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr    # nothing ran: a usage error
    assert "nothing ran" in r.stderr and "no NVIDIA GPU here" in r.stderr.splitlines()[-1]
    records = read_jsonl(tmp_path / "results.jsonl") if (tmp_path / "results.jsonl").exists() else []
    assert all(rec["status"] == "skipped" and "no NVIDIA GPU here" in rec["reason"] for rec in records)


def test_the_gpu_check_script_exits_at_once_without_a_gpu(tmp_path) -> None:
    if pathlib.Path("/dev/nvidia0").exists():
        pytest.skip("this machine has a GPU")
    script = pathlib.Path(__file__).parent.parent / "benchmarks" / "gpu_check.sh"
    r = subprocess.run(["bash", str(script), str(tmp_path / "out")], capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "no NVIDIA GPU" in r.stderr
    assert not (tmp_path / "out" / "results.jsonl").exists()
    json.dumps(r.stderr)  # the message is plain text
