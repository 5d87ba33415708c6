"""Compute phases placed on their machine: counted work, achieved GFLOP/s, and the fractions of the
peak and of the GEMM ceiling measured in the same run (harness.hardware.placement)."""
from __future__ import annotations

import math

import pytest

from conftest import make_record, read_jsonl
from harness.hardware.placement import GemmCeiling, gemm_ceilings, place_phases
from harness.protocol.aggregate import phase_summary
from harness.protocol.context import RunContext
from harness.protocol.phases import PhaseClock
from harness.results.record import PhaseStats
from harness.workload import Workload, checked_workload


def test_the_clock_keeps_counted_work_per_phase_and_starts_afresh() -> None:
    clock = PhaseClock()
    with clock.phase("compute"):
        pass
    clock.add_work("compute", 1e9, 4e8)
    clock.add_work("compute", 1e9)
    clock.add_work("elsewhere", 5.0)      # work counted in a phase that was not timed in this repeat
    taken = clock.take()
    assert taken["compute"]["flops"] == 2e9 and taken["compute"]["bytes"] == 4e8
    assert taken["elsewhere"] == {"seconds": 0.0, "count": 0, "flops": 5.0}
    assert "flops" not in clock.take().get("compute", {})


@pytest.mark.parametrize("flops, nbytes", [(-1.0, 0.0), (math.nan, 0.0), (math.inf, 0.0), (1.0, -2.0)])
def test_count_work_refuses_what_cannot_be_work(flops, nbytes, tmp_path) -> None:
    ctx = RunContext(params={}, size="smoke", threads=1, artifact_dir=tmp_path, clock=PhaseClock())
    with pytest.raises(ValueError, match="count_work"):
        ctx.count_work("compute", flops, nbytes)


def test_phase_rate_is_the_work_of_all_ranks_over_the_slowest_rank() -> None:
    # two ranks, two repeats: rank 1 is the slower (3 s per repeat on average)
    ranks = [{"phases": [{"c": {"seconds": 1.0, "count": 1, "flops": 2e9, "bytes": 1e9}},
                         {"c": {"seconds": 3.0, "count": 1, "flops": 2e9, "bytes": 1e9}}]},
             {"phases": [{"c": {"seconds": 2.0, "count": 1, "flops": 4e9, "bytes": 1e9}},
                         {"c": {"seconds": 4.0, "count": 1, "flops": 6e9, "bytes": 1e9}}]}]
    c = phase_summary(ranks)["c"]
    assert c["flops_per_repeat"] == [6e9, 8e9] and c["bytes_per_repeat"] == [2e9, 2e9]
    assert c["max_s"] == 3.0
    assert c["gflops"] == pytest.approx(7.0 / 3.0) and c["gbs"] == pytest.approx(2.0 / 3.0)
    assert c["flop_per_byte"] == pytest.approx(14e9 / 4e9)
    assert "gflops" not in phase_summary([{"phases": [{"c": {"seconds": 1.0, "count": 1}}]}])["c"]


def _phase(gflops: float) -> PhaseStats:
    return PhaseStats(max_s=1.0, mean_s=1.0, imbalance=0.0, per_rank_s=[1.0], flops_per_repeat=[gflops * 1e9],
                      gflops=gflops)


def test_fractions_of_the_peak_and_of_the_ceiling_scaled_to_the_cores_used() -> None:
    phases = {"fb": _phase(50.0), "other": _phase(1.0), "untimed": PhaseStats(1.0, 1.0, 0.0, [1.0])}
    peaks = {"fp32_gflops": 200.0, "fp64_gflops": 100.0, "source": "derived"}
    ceiling = {"fp32": GemmCeiling(160.0, 2, "roofline record abc (openblas, 2 core(s))")}
    place_phases(phases, {"fb": ("fp32", "counted"), "other": ("fp64", "kernel")}, peaks, ceiling, cores=1)
    fb = phases["fb"]
    assert fb.fraction_of_peak == pytest.approx(0.25)
    assert fb.fraction_of_gemm_ceiling == pytest.approx(50.0 / 80.0)      # 160 on 2 cores: 80 on the case's 1
    assert "scaled to 1 core(s)" in fb.placement_note and fb.dtype == "fp32" and fb.counted_by == "counted"
    other = phases["other"]                                              # no fp64 ceiling measured in this run
    assert other.fraction_of_peak == pytest.approx(0.01) and other.fraction_of_gemm_ceiling is None
    assert "no fp64 GEMM ceiling" in other.placement_note
    assert phases["untimed"].dtype is None and phases["untimed"].to_json().keys() == {
        "max_s", "mean_s", "imbalance", "per_rank_s", "min_s", "count_per_repeat"}


def test_a_rate_above_the_peak_gets_no_fraction_but_the_reason() -> None:
    phases = {"fb": _phase(500.0)}
    place_phases(phases, {"fb": ("fp64", "counted")}, {"fp64_gflops": 100.0, "source": "derived"}, {}, cores=2)
    assert phases["fb"].fraction_of_peak is None and "is wrong" in phases["fb"].placement_note


def test_the_ceiling_is_this_machines_latest_of_each_precision() -> None:
    def roof(key: str, created: str, fp64: float) -> object:
        rec = make_record(status="ok", created=created,
                          metrics={"peak_gflops_fp64": fp64, "peak_gflops_fp32": 2 * fp64, "triad_gbs": 10.0})
        rec.workload.ceilings = {"peak_gflops_fp64": "GFLOP/s", "peak_gflops_fp32": "GFLOP/s", "triad_gbs": "GB/s"}
        rec.identity = dict(rec.machine_identity, key=key)
        rec.launch.threads = 2
        return rec

    records = [roof("me", "2026-01-02", 40.0), roof("me", "2026-01-03", 50.0), roof("other", "2026-01-04", 900.0)]
    got = gemm_ceilings(records, "me")
    assert set(got) == {"fp64", "fp32"} and got["fp64"].gflops == 50.0 and got["fp32"].gflops == 100.0
    assert got["fp64"].cores == 2
    assert gemm_ceilings(records, "nobody") == {}


def test_work_counts_are_validated_like_the_rest_of_the_contract() -> None:
    class Bad(Workload):
        name = "bad_counts"
        work_counts = {"compute": ("fp16", "how")}

        def run(self, ctx):   # pragma: no cover - never run
            return {}

    assert "work_counts" in checked_workload(Bad())[1]


@pytest.mark.torch
def test_torch_flops_counts_a_matrix_product_and_its_backward() -> None:
    torch = pytest.importorskip("torch")
    from harness import torch_flops

    layer = torch.nn.Linear(64, 32, bias=False)
    x = torch.zeros(16, 64, requires_grad=False)
    assert torch_flops(lambda: layer(x)) == 2 * 16 * 64 * 32
    # backward: the weight's gradient only (the input needs none)
    assert torch_flops(lambda: layer(x).sum().backward()) == 2 * (2 * 16 * 64 * 32)


@pytest.mark.mpi
def test_a_run_places_each_counted_phase_against_the_ceiling_it_measured_first(harness_cli, tmp_path) -> None:
    """The roofline runs first however the cases are listed; the other records carry their
    fractions of its GEMM ceiling; `show` and the report print them."""
    r = harness_cli("run", "--workload", "psgd_svm,roofline", "--size", "smoke", "--ranks", "2", "--threads", "1",
                    "--repeats", "2", "--out", str(tmp_path))
    assert r.returncode == 0, r.stdout + r.stderr
    roof, psgd = read_jsonl(tmp_path / "results.jsonl")
    assert roof["workload"]["name"] == "roofline" and psgd["workload"]["name"] == "psgd_svm"
    compute = psgd["phases"]["compute"]
    ceiling = roof["metrics"]["peak_gflops_fp64"]
    assert compute["fraction_of_gemm_ceiling"] == pytest.approx(compute["gflops"] / ceiling)
    assert roof["id"][:8] in compute["placement_note"]
    shown = harness_cli("show", str(tmp_path), env={"COLUMNS": "500"})
    assert shown.returncode == 0 and f"compute {compute['gflops']:.3g} GF/s fp64 = " in shown.stdout
    md = tmp_path / "r.md"
    assert harness_cli("report", str(tmp_path), "--out", str(md)).returncode == 0
    text = md.read_text()
    assert "## Compute phases on their machine" in text
    row = next(line for line in text.splitlines() if line.startswith("| ") and "| compute | fp64 |" in line)
    assert f"{compute['gflops']:.3g}" in row


def test_the_gallery_capture_places_every_counting_workload_in_headless_chromium(harness_cli, tmp_path) -> None:
    """The AMX capture's html report, rendered by Chromium: the section lists a counted phase of each
    workload that counts its work, with a fraction of the GEMM ceiling, and draws its figure."""
    import pathlib
    import re
    import shutil
    import subprocess

    from harness.registry import build_registry

    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        pytest.skip("Debian's chromium is not installed (apt-get install chromium)")
    capture = pathlib.Path(__file__).resolve().parent.parent / "gallery" / "intel-xeon-amx-2c"
    html = tmp_path / "r.html"
    assert harness_cli("report", str(capture), "--out", str(html)).returncode == 0
    r = subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                        "--disable-background-networking", "--disable-component-update", "--disable-sync",
                        f"--user-data-dir={tmp_path / 'profile'}", "--dump-dom", html.as_uri()],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    section = r.stdout.split("Compute phases on their machine</h2>", 1)[1].split("<h2>", 1)[0]
    registry = build_registry()
    counting = {name for name, w in registry.workloads.items() if w.work_counts
                and registry.source("workload", name).startswith("hpml-harness:")}
    rows = re.findall(r"<tr>(.*?)</tr>", section, re.S)
    placed = {re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)[1] for row in rows[1:]}
    assert counting <= placed, counting - placed
    fractions = [re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)[6] for row in rows[1:]]
    assert all(float(f) > 0 for f in fractions), fractions      # every phase against the run's own ceiling
    assert re.search(r"<img[^>]+alt=\"[^\"]*compute phases on the roofline", section)
