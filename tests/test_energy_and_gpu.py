"""Energy per case and per phase with the method stated (zeus), GPU evidence from NVML, and the
cuda backend refusing cleanly where there is no GPU. A test double of the NVML binding
(tests/fixtures/fake_nvml: one "NVIDIA H200" drawing a constant 400 W) stands in for a GPU node,
below zeus's own NVML layer; a scripted monitor stands in for zeus itself. Nothing here needs a GPU."""
from __future__ import annotations

import importlib.util
import json
import os
import pathlib
import subprocess
import sys
from types import SimpleNamespace

import pytest

from conftest import read_jsonl
from harness.protocol.aggregate import energy_summary
from harness.protocol.energy import OUTSIDE, EnergyMeter, energy_meter, rapl_readable
from harness.protocol.phases import PhaseClock

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


def test_rapl_probe_says_why_before_zeus_is_imported(tmp_path) -> None:
    assert rapl_readable(tmp_path / "absent") == "no RAPL powercap"
    assert rapl_readable(tmp_path) == "no readable RAPL powercap"
    zone = tmp_path / "intel-rapl:0"
    zone.mkdir()
    (zone / "energy_uj").write_text("999000000\n")
    assert rapl_readable(tmp_path) == ""


class ScriptedMonitor:
    """A stub at the library boundary (zeus's ZeusMonitor): each window's energy is the next of
    ``joules`` (GPU 0) and ``cpu`` (package 0), in the order the windows end."""

    def __init__(self, joules: list[float], cpu: list[float] | None = None) -> None:
        self.gpu_indices, self.cpu_indices = [0], [0] if cpu else []
        self._gpu, self._cpu = iter(joules), iter(cpu or [])
        self.open: list[str] = []

    def begin_window(self, key: str, sync_execution: bool = True) -> None:
        assert key not in self.open
        self.open.append(key)

    def end_window(self, key: str, sync_execution: bool = True, cancel: bool = False):
        self.open.remove(key)
        cpu = {0: next(self._cpu)} if self.cpu_indices else None
        return SimpleNamespace(gpu_energy={0: next(self._gpu)}, cpu_energy=cpu, dram_energy=None)


def test_each_stretch_is_charged_to_the_phase_open_during_it() -> None:
    """Exclusive, as the clock charges time: a nested phase's stretch is not its parent's, and the
    phases (with the stretch outside any) sum to the repeat."""
    monitor = ScriptedMonitor([1.0, 10.0, 2.0, 20.0, 4.0, 40.0, 99.0], cpu=[0.5] * 7)
    meter = EnergyMeter(monitor, "stub")
    clock = PhaseClock()
    clock.meter = meter
    meter.start()
    clock.take()
    meter.take(measured=False)                 # 1 J + 0.5: before the repeat, dropped
    with clock.phase("forward"):               # 10 J: outside, until forward starts
        with clock.phase("comm_wait"):         # 2 J: forward, until comm_wait starts; 20 J: comm_wait
            pass
    clock.take()                               # 4 J: forward's tail; 40 J: outside, until the take
    meter.take(measured=True)
    (rep,) = meter.repeats
    assert rep == {OUTSIDE: 10.5 + 40.5, "forward": 2.5 + 4.5, "comm_wait": 20.5}
    result = meter.result()
    assert result["joules_per_repeat"] == [pytest.approx(sum(rep.values()))]
    assert result["phases_j"]["comm_wait"] == [20.5] and result["sources_j"] == {"gpu": [76.0], "cpu": [2.5]}
    assert monitor.open == ["harness-6"]       # one window always open, the next stretch's


@pytest.mark.skipif(importlib.util.find_spec("zeus") is None, reason="zeus not installed (the energy extra)")
def test_zeus_over_a_fake_gpu_gives_energy_per_phase_that_sums_to_the_repeat(tmp_path) -> None:
    """zeus's own NVML path, with the NVML binding below it replaced by the fake H200 at 400 W:
    each phase's joules are 400 W x its seconds, and the phases sum to the repeat's joules."""
    script = (
        "import json, time\n"
        "import pathlib\nfrom harness.protocol.energy import energy_meter\n"
        "from harness.protocol.phases import PhaseClock\n"
        f"meter, why = energy_meter(pathlib.Path({str(tmp_path / 'no-powercap')!r}), gpus_used=True)\n"
        "assert meter is not None, why\n"
        "clock = PhaseClock(); clock.meter = meter; meter.start(); clock.take(); meter.take(measured=False)\n"
        "t = {}\n"
        "for name, s in (('forward', 0.3), ('backward', 0.15)):\n"
        "    t0 = time.perf_counter()\n"
        "    with clock.phase(name):\n"
        "        time.sleep(s)\n"
        "    t[name] = time.perf_counter() - t0\n"
        "clock.take(); meter.take(measured=True)\n"
        "print(json.dumps({'result': meter.result(), 'seconds': t}))\n")
    env = {**os.environ, "PYTHONPATH": f"{FAKE_NVML}{os.pathsep}{os.environ.get('PYTHONPATH', '')}",
           "FAKE_NVML_WATTS": "400"}
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    result, seconds = out["result"], out["seconds"]
    assert result["method"].startswith("zeus measurement windows (NVML energy of 1 GPU(s))")
    assert "read by rank 0 for its node" in result["method"]
    for name in ("forward", "backward"):
        assert result["phases_j"][name][0] == pytest.approx(400 * seconds[name], rel=0.1)
    (total,) = result["joules_per_repeat"]
    assert sum(v[0] for v in result["phases_j"].values()) == pytest.approx(total, rel=1e-9)
    assert result["sources_j"] == {"gpu": [pytest.approx(total)]}


def test_a_case_on_no_gpu_is_not_charged_the_gpus_energy(tmp_path, monkeypatch) -> None:
    """On a GPU node a CPU case would read the idle GPUs' counters (8 J per repeat of psgd_svm on
    an H200 node): they are left out, and the record says why."""
    import harness.protocol.energy as energy

    monkeypatch.setattr(energy, "nvml_usable", lambda: "")   # as on a GPU node
    meter, why = energy_meter(tmp_path / "no-powercap", gpus_used=False)
    assert meter is None and "GPUs not read: the case runs on none" in why["reason"]


def test_nodes_are_summed_and_a_node_without_counters_leaves_no_sum() -> None:
    node = {"method": "zeus measurement windows (stub), read by rank 0 for its node",
            "joules_per_repeat": [10.0, 12.0], "phases_j": {"forward": [6.0, 7.0], OUTSIDE: [4.0, 5.0]}}
    other = {**node, "joules_per_repeat": [20.0, 22.0], "phases_j": {"forward": [15.0, 16.0], OUTSIDE: [5.0, 6.0]}}
    ranks = [{"host": "n1", "energy": node}, {"host": "n1", "energy": {}}, {"host": "n2", "energy": other}]
    summed = energy_summary(ranks)
    assert summed["joules_per_repeat"] == [30.0, 34.0] and summed["median_j"] == 32.0
    assert summed["phases_j"] == {"forward": [21.0, 23.0], OUTSIDE: [9.0, 11.0]}
    assert summed["method"].endswith("; 2 nodes summed") and set(summed["per_node"]) == {"n1", "n2"}
    ranks[2]["energy"] = {"method": None, "reason": "energy: not measurable here (no RAPL powercap, ...)"}
    partial = energy_summary(ranks)
    assert partial["median_j"] is None and partial["reason"].startswith("energy: measured on 1 of 2 nodes, so not summed")
    assert energy_summary([{"host": "n1", "energy": {}}])["reason"] == "energy: not read"
