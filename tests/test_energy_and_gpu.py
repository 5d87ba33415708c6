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
    assert energy["reason"].startswith("energy: not measurable here (no RAPL powercap")
    assert "GPUs not read: the case runs on none" in energy["reason"]   # no backend: a CPU case
    report = harness_cli("report", str(tmp_path))
    assert "energy: not measurable here" in report.stdout


def test_fake_nvml_gives_the_gpu_in_the_fingerprint_but_no_energy_to_a_cpu_case(harness_cli, tmp_path) -> None:
    env = {"PYTHONPATH": f"{FAKE_NVML}:{harness_cli.env()['PYTHONPATH']}", "FAKE_NVML_WATTS": "400"}
    r = harness_cli("run", "--workload", "fault_slow", "--param", "seconds=0.2", "--repeats", "3",
                    "--warmup", "0", "--out", str(tmp_path), env=env)
    assert r.returncode == 0, r.stderr
    (rec,) = read_jsonl(tmp_path / "results.jsonl")
    energy = rec["resources"]["energy"]
    assert energy["method"] is None and "GPUs not read: the case runs on none" in energy["reason"]
    (gpu,) = rec["hardware"]["gpus"]
    assert gpu["name"] == "NVIDIA H200" and gpu["source"] == "nvml" and gpu["power_limit_w"] == 700
    assert gpu["cuda_driver"] == "13.0" and gpu["memory"] == "143771 MiB"
    assert rec["profile"]["name"] == "h200-sxm"


def test_fake_nvml_energy_is_watts_times_the_repeat(tmp_path, monkeypatch) -> None:
    """The NVML path a GPU case takes (run end to end on an H200: tests/fixtures/records/gpu-node)."""
    import importlib.util
    import sys
    import time

    monkeypatch.setenv("FAKE_NVML_WATTS", "400")
    spec = importlib.util.spec_from_file_location("pynvml", FAKE_NVML / "pynvml.py")
    fake = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(fake)
    monkeypatch.setitem(sys.modules, "pynvml", fake)   # taken out again after the test
    meter, why = energy_meter(tmp_path / "no-powercap")
    assert meter is not None, why
    assert "NVML total-energy counter of 1 GPU" in meter.method and "rank 0" in meter.method
    for seconds in (0.1, 0.3):
        t0 = time.perf_counter()
        meter.start()
        time.sleep(seconds)
        meter.stop()
        elapsed = time.perf_counter() - t0
        assert meter.per_counter["nvml:gpu0"][-1] == pytest.approx(400 * elapsed, rel=0.2, abs=5.0)


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


def test_a_case_on_no_gpu_is_not_charged_the_gpus_energy(tmp_path, monkeypatch) -> None:
    """On a GPU node a CPU case would read the idle GPUs' counters (8 J per repeat of psgd_svm on
    an H200 node): they are left out, and the record says why."""
    import harness.protocol.energy as energy

    monkeypatch.setattr(energy, "nvml_counters", lambda: ([Counter("nvml:gpu0", lambda: 1.0)], ""))
    with_gpu, _ = energy_meter(tmp_path / "no-powercap")
    assert with_gpu is not None and "NVML" in with_gpu.method
    meter, why = energy_meter(tmp_path / "no-powercap", gpus_used=False)
    assert meter is None and "the case runs on none" in why["reason"]


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
