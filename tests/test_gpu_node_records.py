"""Records from a real GPU node (one NVIDIA H200 with a 16-core Xeon, lent for a session), made by
benchmarks/gpu_check.sh and committed under tests/fixtures/records/gpu-node: bragg_unet and kfac
on the cuda backend with NVML energy, the node's CPU side (suites/cpu-side.toml), `harness info`
and the GEMM throughput through torch. They must stay readable and render beside this x86_64
machine's records (tests/fixtures/records/cross-arch/x86_64)."""
from __future__ import annotations

import json
import pathlib

from harness.results.store import read_records

NODE = pathlib.Path(__file__).parent / "fixtures" / "records" / "gpu-node"
CPU_CAPTURE = NODE.parent / "cross-arch" / "x86_64" / "results.jsonl"


def _records():
    records, problems = read_records(NODE / "results.jsonl")
    assert problems == []
    return records


def test_the_gpu_cases_ran_verified_on_the_h200_with_their_energy() -> None:
    gpu = [r for r in _records() if r.backend.requested == "cuda"]
    assert sorted(r.workload.name for r in gpu) == ["bragg_unet", "kfac"]
    for r in gpu:
        assert r.ok and r.backend.verified, (r.case_id, r.reason)
        cuda = r.backend.evidence["cuda"]
        assert cuda["device"] == "NVIDIA H200" and cuda["capability"] == [9, 0]
        assert cuda["max_memory_allocated"] > 0 and cuda["cudnn"] > 0
        assert cuda["cublas"]["version"].split(".")[0].isdigit()
        energy = r.resources["energy"]
        assert energy["method"].startswith("NVML total-energy counter of 1 GPU")
        assert len(energy["joules_per_repeat"]) == len(r.samples)
        seconds = sorted(r.samples)
        for joules, s in zip(sorted(energy["joules_per_repeat"]), seconds):
            assert 30 * s < joules < 700 * s   # between an idle H200's draw and its 700 W limit
        assert r.hardware["gpus"][0]["name"] == "NVIDIA H200"


def test_the_cpu_side_is_not_charged_the_idle_gpus_energy() -> None:
    cpu = [r for r in _records() if r.backend.requested != "cuda"]
    assert {r.workload.name for r in cpu} == {"psgd_svm", "dpmm", "cnn_scaling", "roofline"}
    assert {r.launch.ranks for r in cpu} == {1, 2, 4, 8}
    assert all(r.ok for r in cpu)
    for r in cpu:
        assert r.resources["energy"]["method"] is None
        assert "GPUs not read" in r.resources["energy"]["reason"]


def test_the_gemm_capture_gives_each_precision_against_the_h200_peaks() -> None:
    gemm = json.loads((NODE / "gemm.json").read_text())
    assert gemm["device"] == "NVIDIA H200" and gemm["profile"] == "h200-sxm"
    best = {}
    for row in gemm["rows"]:
        best[row["precision"]] = max(best.get(row["precision"], 0), row["fraction_of_peak"])
    assert set(best) == {"fp32", "tf32", "bf16"}
    assert all(0.3 < f <= 1.0 for f in best.values()), best   # a real measurement: below the peak


def test_the_report_puts_the_gpu_node_beside_the_cpu_machine(harness_cli) -> None:
    r = harness_cli("report", str(NODE), str(CPU_CAPTURE))
    assert r.returncode == 0, r.stderr
    for workload in ("psgd_svm", "roofline"):
        section = r.stdout.split(f"## {workload}\n", 1)[1].split("\n## ", 1)[0]
        rows = [[c.strip() for c in ln.strip("|").split(" | ")] for ln in section.splitlines()
                if ln.startswith("| ")][1:]
        machines = {row[2] for row in rows}
        # named by what it is, never after the profile its GPU matched
        assert "Intel Xeon (icelake+AMX), 16 CPUs + 1x NVIDIA H200" in machines and len(machines) == 2, machines
        assert not any("h200-sxm" in m for m in machines)
    bragg = r.stdout.split("## bragg_unet\n", 1)[1].split("\n## ", 1)[0]
    assert "CUDA 13.0 on NVIDIA H200" in bragg and " J/box)" in bragg
