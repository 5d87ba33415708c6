"""Machines side by side: matched cases, speed-up intervals, the verdict matrix, portability."""
from __future__ import annotations

import csv
import json

import numpy as np
import pytest

from conftest import make_record
from harness.judging.claims import ClaimVerdict
from harness.report.machines import by_machine, portability, verdict_matrix
from harness.results.frame import load
from harness.results.record import LaunchInfo, Stats
from harness.results.store import append_record


def _stats(samples: list[float]) -> Stats:
    a = np.asarray(samples)
    return Stats(n=len(a), median=float(np.median(a)), mean=float(a.mean()), std=float(a.std()), min=float(a.min()),
                 max=float(a.max()), iqr=0.0, ci95=[float(a.min()), float(a.max())], cov=float(a.std() / a.mean()),
                 unstable=False)


def _machine(folder, model: str, scale: float, verdict: str, cpus: int = 2) -> None:
    """Two cases on a machine whose seconds per repeat are ``scale`` x a common noisy sample."""
    rng = np.random.default_rng(0)
    for i, name in enumerate(("case-a", "case-b")):
        samples = list(scale * (1.0 + i) * (1 + 0.02 * rng.standard_normal(12)))
        claim = ClaimVerdict(metric="m", comparison=">=", threshold=1.0, status=verdict, measured=1.0)
        rec = make_record(id=f"{model[:4]}{i}".ljust(16, "0"), case_id=f"w[smoke]{{{name}}}",
                          params={"name": name}, swept={"name": name}, samples=samples, stats=_stats(samples),
                          hardware={"arch": "x86_64", "hostname": model.lower(),
                                    "cpu": {"model": model, "usable_cpus": cpus}},
                          launch=LaunchInfo("local", 1, cpus, ["python"]), claims=[claim] if i == 0 else [])
        append_record(folder / "results.jsonl", rec)


# machines are named by their facts: the model string (its "CPU" word dropped) and the usable CPUs
SLOW, FAST = "Slow, 2 CPUs", "Fast, 16 CPUs"


@pytest.fixture
def two_machines(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    _machine(a, "Slow CPU", 2.0, "fail", cpus=2)
    _machine(b, "Fast CPU", 1.0, "pass", cpus=16)
    return a, b


def test_a_known_2x_difference_comes_out_as_2_with_an_interval_covering_it(two_machines, harness_cli, tmp_path):
    a, b = two_machines
    out = tmp_path / "m.csv"
    proc = harness_cli("report", str(a), str(b), "--by-machine", "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    rows = list(csv.DictReader(out.open()))
    assert len(rows) == 2                                # one row per matched case
    fast = FAST
    for row in rows:
        assert row["cpus"] == "all"                      # one rank on every CPU matches across 2 and 16 cores
        ratio, lo, hi = (float(row[f"{fast} | speedup{s}"]) for s in ("_vs_ref", "_low", "_high"))
        assert ratio == pytest.approx(2.0, rel=0.02) and lo < 2.0 < hi and hi / lo < 1.1
        assert float(row[f"{fast} | median_s"]) < float(row[f"{SLOW} | median_s"])
    again = harness_cli("report", str(a), str(b), "--by-machine", "--reference", "fast", "--out", str(out))
    assert again.returncode == 0, again.stderr
    row = next(csv.DictReader(out.open()))
    assert float(row[f"{SLOW} | speedup_vs_ref"]) == pytest.approx(0.5, rel=0.02)
    bad = harness_cli("report", str(a), str(b), "--by-machine", "--reference", "power9", "--out", str(out))
    assert bad.returncode == 2 and "no machine matches" in bad.stderr
    md = harness_cli("report", str(a), str(b), "--by-machine")
    assert md.returncode == 2 and "FILE.csv" in md.stderr


def test_verdict_matrix_and_portability(two_machines) -> None:
    a, b = two_machines
    df = load([a, b])
    names, rows = verdict_matrix(df)
    assert names == [SLOW, FAST]
    assert rows == [["w: m >= 1", "FAIL", "pass"]]
    (entry,) = portability(df)
    # application efficiency: the fast machine 1, the slow one 0.5: PP = 2 / (1 + 2) = 2/3
    assert entry["efficiency"] == pytest.approx({SLOW: 0.5, FAST: 1.0}, rel=0.02)
    assert entry["pp_app"] == pytest.approx(2 / 3, rel=0.02)
    assert entry["pp_app_low"] <= entry["pp_app"] <= entry["pp_app_high"]
    wide = by_machine(df)
    assert wide.attrs["machines"] == names


def test_a_machine_that_did_not_run_a_workload_gives_portability_zero(two_machines, tmp_path) -> None:
    a, b = two_machines
    c = tmp_path / "c"
    c.mkdir()
    append_record(c / "results.jsonl", make_record(id="c000000000000000", workload=make_record().workload.__class__(
        "other", "t:other"), hardware={"arch": "x86_64", "hostname": "c", "cpu": {"model": "Third CPU"}}))
    df = load([a, b, c])
    (named,) = [e for e in portability(df, platforms=["Third", *[m for m in df.machine.unique() if m != "Third"]])
                if e["workload"] == "w"]
    assert named["pp_app"] == 0.0 and named["missing"] == ["Third"]     # a named set: 0 where one did not run it
    (default,) = [e for e in portability(df) if e["workload"] == "w"]   # by default: the set that ran it
    assert "Third" not in default["platforms"] and default["pp_app"] > 0 and not default["missing"]


def test_gallery_and_cross_arch_records_render_side_by_side(harness_cli, tmp_path) -> None:
    """The issue's own check: the gallery's real machines beside the emulated cross-architecture
    records: machine columns, the verdict matrix, the grouped plot, portability; emulated columns
    carry verdicts and timings but never a speed-up."""
    import pathlib
    import re
    import shutil
    import subprocess

    root = pathlib.Path(__file__).resolve().parent.parent
    inputs = [*map(str, sorted((root / "gallery").iterdir())),
              *map(str, sorted((root / "tests/fixtures/records/cross-arch").iterdir()))]
    md = tmp_path / "r.md"
    assert harness_cli("report", *inputs, "--out", str(md)).returncode == 0
    text = md.read_text()
    for section in ("## Machines\n", "## Claims per machine", "## Machines side by side", "## Performance portability"):
        assert section in text
    side = text.split("## Machines side by side")[1].split("\n## ")[0]
    # the H200 capture ran other workload versions than the Zen 4 one: those cases are listed once,
    # not compared, and no row carries a commit note
    assert "commits differ" not in text
    different = text.split("## Not compared: different protocol")[1].split("\n## ")[0]
    assert "roofline[small]" in different and "NVIDIA H200" in different
    header = next(line for line in side.splitlines() if line.startswith("| case |"))
    columns = [c.strip() for c in header.strip("|").split("|")]
    assert any("NVIDIA H200" in c for c in columns) and not any("h200-sxm" in c for c in columns)
    assert sum("[emulated]" in c for c in columns) >= 1 and len(columns) >= 4
    emulated = [i for i, c in enumerate(columns) if "[emulated]" in c]
    for line in side.splitlines()[4:]:
        cells = [c.strip() for c in line.strip("|").split("|")]
        assert all(not re.search(r"; x\d", cells[i]) for i in emulated if i < len(cells))
    html = tmp_path / "r.html"
    assert harness_cli("report", *inputs, "--out", str(html)).returncode == 0
    page = html.read_text()
    assert "Performance portability" in page and "Not compared: different protocol" in page
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        return
    shot = tmp_path / "r.png"
    r = subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                        "--disable-background-networking", "--disable-component-update", "--disable-sync",
                        f"--user-data-dir={tmp_path / 'profile'}", "--window-size=1400,3000",
                        f"--screenshot={shot}", html.as_uri()], capture_output=True, text=True, timeout=120)
    assert shot.is_file() and shot.stat().st_size > 20_000, r.stderr[-2000:]


def test_roofline_model_predicts_from_the_reported_work() -> None:
    """t = flops / peak + bytes / bandwidth per precision; a profile without a needed peak gives
    no prediction; measured / predicted only where the record ran on the profile's own SKU with
    the whole node (never a slice, never a machine of the same family)."""
    import pandas as pd

    from harness.report.model import model_rows, predicted_seconds

    node = {"kind": "cpu-node", "cpu": {"cores": 2}, "peak": {"fp64_gflops": 1000.0, "fp32_gflops": 2000.0},
            "memory": {"bandwidth_gbs": 100.0}}
    work = {"work_flops_fp64": 2e12, "work_flops_fp32": 2e12, "work_bytes": 5e11}
    assert predicted_seconds(work, node) == pytest.approx(2.0 + 1.0 + 5.0)
    assert predicted_seconds(work, {"peak": {"fp64_gflops": 1.0}}) is None
    def row(machine: str, threads: int, match_by: str) -> dict:
        return {"workload": "w", "size": "small", "params": "{}", "ranks": 1, "threads": threads,
                "backend": "default", "machine": machine, "emulated": False, "status": "ok", "control": "",
                "created": "2026", "median_s": 16.0, "metrics": work,
                "machine_info": json.dumps({"profile": "node", "profile_match": match_by})}
    df = pd.DataFrame([row("the node", 2, "model"), row("a slice of it", 1, "model"), row("its cousin", 2, "family")])
    columns, rows = model_rows(df, {"node": node, "other": {"peak": {}, "memory": {}}})
    assert columns == ["case (where it was measured)", "measured there", "node", "other"]
    assert sorted(rows) == sorted([["w[small] on the node", "16 s", "8 s (measured / predicted 2)", ""],
                                   ["w[small] on a slice of it", "16 s", "8 s", ""],
                                   ["w[small] on its cousin", "16 s", "8 s", ""]])


def test_side_by_side_gives_joules_per_item_and_to_target_where_energy_was_measured() -> None:
    """A person choosing between a GPU and a CPU node for training asks J per image and J to
    quality; a machine without counters shows neither, and nothing is made up for it."""
    import pandas as pd

    from harness.report.machines import side_by_side_rows
    from harness.report.units import joules_per_item

    gpu = {"median_s": 2.0, "ci_low_s": 1.9, "ci_high_s": 2.1, "energy_j": 800.0,
           "j_per_item": joules_per_item(800.0, 2.0, 1000.0, "boxes/s"), "time_to_quality_s": 19.0,
           "time_to_quality_low_s": 17.0, "time_to_quality_high_s": 21.0, "time_to_quality_runs": "5/5",
           "energy_to_quality_j": 7600.0}
    cpu = {"median_s": 20.0, "ci_low_s": 19.0, "ci_high_s": 21.0, "energy_j": None,
           "j_per_item": joules_per_item(None, 20.0, 100.0, "boxes/s"), "time_to_quality_s": 190.0,
           "time_to_quality_low_s": 170.0, "time_to_quality_high_s": 210.0, "time_to_quality_runs": "5/5",
           "energy_to_quality_j": float("nan")}
    row = {"workload": "bragg_unet", "size": "small", "params": "{}", "ranks": 1, "cpus": "all", "backend": "default",
           **{f"GPU node | {k}": v for k, v in gpu.items()}, **{f"CPU node | {k}": v for k, v in cpu.items()}}
    wide = pd.DataFrame([row])
    wide.attrs["machines"] = ["GPU node", "CPU node"]
    _, rows = side_by_side_rows(wide)
    (cells,) = rows
    assert "; 0.4 J/box; to target 19 s [17, 21] (5/5, 7.6e+03 J)" in cells[1]
    assert "J" not in cells[2] and "to target 190 s [170, 210] (5/5)" in cells[2]
