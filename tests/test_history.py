"""`harness history` and `harness export-asv`: series of real records, their change points, what
changed at each, and the same series published by asv."""
from __future__ import annotations

import copy
import json
import math
import os
import pathlib
import shutil
import subprocess
import sys

import numpy as np
import pytest

from conftest import ROOT, read_jsonl
from harness.history.provenance import changes, provenance
from harness.history.series import build_series
from harness.history.steps import find_steps
from harness.results.record import Record, upgrade

sys.path.insert(0, str(ROOT / "benchmarks"))
import change_points  # noqa: E402



def test_pelt_is_chosen_because_it_finds_steps_that_asv_misses_without_false_ones() -> None:
    """The choice of change-point method, held to its figures on seeded series with known steps
    (benchmarks/change_points.py): behind the same interval, PELT finds most steps of 1.1x and all
    larger ones, with false steps within the interval's 5 %; asv.step_detect finds fewer of the
    small ones; PELT alone, without the interval, is fooled by noise."""
    figures = change_points.evaluate(100, seed=1)
    pelt, asv = figures["pelt+interval"], figures["asv+interval"]
    assert pelt[None][0] == 0 and pelt[None][1] <= 0.1, pelt      # 20 series without a step
    assert pelt[1.1][0] >= 0.8, pelt
    for ratio in (1.25, 1.5, 2.0):
        assert pelt[ratio][0] >= 0.95 and pelt[ratio][1] <= 0.1, (ratio, pelt)
    assert asv[1.1][0] < pelt[1.1][0] and asv[1.25][0] < pelt[1.25][0], figures
    assert figures["pelt"][None][1] > 0.15                   # without the interval, PELT alone is fooled
    short = change_points.evaluate(60, seed=1, lengths=(2, 3, 4))["pelt+interval"]
    assert short[None] == (0.0, 0.0), short                   # short histories: still no false alarm
    assert short[2.0][0] > 0                                  # and a 2x step can still be confirmed


def test_the_c_fit_finds_the_same_boundaries_as_rupturess_pelt() -> None:
    """`pelt_l2` (ruptures' KernelCPD with the linear kernel, in C) stands in for
    ruptures.Pelt(model="l2"): same boundaries on seeded series of 2-60 runs with and without steps."""
    import ruptures

    from harness.history.steps import pelt_l2
    rng = np.random.default_rng(7)
    for _ in range(200):
        n = int(rng.integers(2, 61))
        y = rng.normal(0, 0.03, n) + (np.arange(n) >= rng.integers(1, n + 1)) * float(rng.choice([0.0, 0.05, 0.3]))
        penalty = 2 * 0.03 ** 2 * math.log(n)
        assert pelt_l2(y, penalty) == ruptures.Pelt(model="l2", min_size=1, jump=1).fit(y).predict(pen=penalty), y


def test_a_command_over_many_series_keeps_its_false_alarm_rate() -> None:
    """The gate: of 40 commands each reading 20 seeded series without a step, those that confirm
    any step (interval alone, threshold 0). Each candidate at 95 % gives most commands a false
    alarm; at the family-wise level `harness history` uses, about 1 in 20 or fewer."""
    nominal, family = change_points.false_alarms(40, seed=1)
    assert nominal >= 0.2, nominal
    assert family <= 0.1, family


def test_one_run_a_side_confirms_nothing(template) -> None:
    """Two runs, the second 2x slower: with one run per segment nothing tells the step from
    run-to-run variation, so the candidate stays unconfirmed and says why."""
    (series,) = build_series(_seeded_records(template, 2, 0, step_at=1, factor=2.0))
    (step,) = find_steps(series)
    assert not step.confirmed and step.ratio == pytest.approx(2.0, rel=0.1)
    assert "run-to-run variation is unknown" in step.describe(series)


def test_two_runs_against_one_say_so_instead_of_an_absurd_interval(template) -> None:
    """Three runs, the third 1.2x slower: one residual degree of freedom leaves run-to-run variation
    almost unknown, so the candidate is unconfirmed and its text says why, not just a huge interval."""
    (series,) = build_series(_seeded_records(template, 3, 0, step_at=2, factor=1.2))
    (step,) = find_steps(series, confidence=0.99)
    assert not step.confirmed and step.high / step.low > 10
    assert "2+1 runs say almost nothing of run-to-run variation" in step.describe(series)


# -- a series of real records ---------------------------------------------------------------------

@pytest.mark.slow
def test_history_finds_the_one_step_and_names_the_setting_that_changed(harness_cli, real_series, tmp_path) -> None:
    before, after = real_series
    r = harness_cli("history", str(before), str(after), "--threshold", "2", "--json")
    assert r.returncode == 1, r.stdout[-3000:] + r.stderr     # a slowdown in the newest runs: the CI gate
    (series,) = json.loads(r.stdout)
    assert len(series["points"]) == 8
    print("run medians (ms):", [round(1e3 * p["median_s"], 2) for p in series["points"]])
    steps = [s for s in series["steps"] if s["kind"] != "unconfirmed"]
    assert len(steps) == 1, steps
    (step,) = steps
    assert step["kind"] == "slowdown" and step["newest"] and step["interval"][0] > 1 and step["ratio"] >= 3, step
    run_ids = [p["run_id"] for p in series["points"]]
    assert run_ids.index(step["after_run"]) == 4                  # between run 4 and 5
    first = step["changed"][0]
    assert (first["name"], first["before"], first["after"], first["consistent"]) == \
        ("env:NUMBA_DISABLE_JIT", "unset", "1", True)
    assert [c["name"] for c in step["changed"] if c["consistent"]] == ["env:NUMBA_DISABLE_JIT"]

    text = harness_cli("history", str(before), str(after), "--threshold", "2", "--plot", str(tmp_path / "p"))
    assert text.returncode == 1
    assert "slowed" in text.stdout and "between run 4 and 5; changed then: env:NUMBA_DISABLE_JIT unset -> 1" \
        in " ".join(text.stdout.split())
    assert "slowdown in the newest runs" in text.stderr
    (png,) = (tmp_path / "p").glob("*.png")
    assert png.read_bytes()[:4] == b"\x89PNG"

    calm = harness_cli("history", str(before), "--threshold", "2", "--json")   # the runs before it: no step
    assert calm.returncode == 0, calm.stdout[-2000:]
    assert not [s for s in json.loads(calm.stdout)[0]["steps"] if s["kind"] != "unconfirmed"]


def _seeded_records(template: dict, n_runs: int, seed: int, step_at: int | None = None,
                    env_after: dict[str, str] | None = None, factor: float = 1.5) -> list[Record]:
    """Copies of one real record as a run history: each run's samples drawn with seeded log-normal
    noise (3 % within a run, 1 % between runs) around the template's median, times 60 s apart."""
    rng = np.random.default_rng(seed)
    base = float(np.median(template["samples"]))
    out = []
    for i in range(n_runs):
        d = copy.deepcopy(template)
        level = base * (factor if step_at is not None and i >= step_at else 1.0) * math.exp(rng.normal(0, 0.01))
        d["samples"] = list(level * np.exp(rng.normal(0, 0.03, 10)))
        d["stats"]["median"] = float(np.median(d["samples"]))
        d["stats"]["ci95"] = [float(np.quantile(d["samples"], 0.1)), float(np.quantile(d["samples"], 0.9))]
        d["run_id"], d["id"] = f"seeded-{i:02d}", f"{i:032x}"
        d["created"] = f"2026-12-04T10:{i:02d}:00+00:00"
        if env_after and step_at is not None and i >= step_at:
            d["environment"] = {**d["environment"], **env_after}
        out.append(Record.from_json(upgrade(d)))
    return out


@pytest.fixture(scope="module")
def template() -> dict:
    """A real record of this machine's gallery capture (roofline[small])."""
    for line in (ROOT / "gallery" / "amd-epyc-zen4-2c" / "results" / "results.jsonl").read_text().splitlines():
        d = json.loads(line)
        if d["workload"]["name"] == "roofline" and d["status"] == "ok":
            return d
    raise AssertionError("no roofline record in the gallery")


def test_seeded_noise_without_a_step_reports_none(template) -> None:
    for seed in range(5):
        (series,) = build_series(_seeded_records(template, 12, seed))
        assert not [s for s in find_steps(series) if s.confirmed], seed


def test_a_seeded_step_is_found_where_it_is_and_explained(template) -> None:
    records = _seeded_records(template, 10, 3, step_at=6, env_after={"OMP_PROC_BIND": "close"})
    records[2].status, records[2].samples, records[2].stats = "failed", [], None   # a run that crashed
    (series,) = build_series(records)
    (step,) = [s for s in find_steps(series) if s.confirmed]
    assert step.kind == "slowdown" and step.newest and step.low > 1.3 and step.high < 1.7
    assert series.points.index(step.after[0]) == 6
    assert [c.text() for c in step.changed] == ["env:OMP_PROC_BIND unset -> close"]
    assert "between run 6 and 7; changed then: env:OMP_PROC_BIND unset -> close" in step.describe(series)


def test_a_speed_up_is_said_as_one_with_its_interval_turned_round(template) -> None:
    (series,) = build_series(_seeded_records(template, 8, 4, step_at=4, factor=0.5))
    (step,) = [s for s in find_steps(series) if s.confirmed]
    assert step.kind == "speed-up" and step.high < 0.6
    text = step.describe(series)
    low, high = (float(x) for x in text.split("x [")[1].split("]")[0].split(", "))
    assert "sped up 2" in text and 1.7 < low < 2 < high < 2.4 and "nothing recorded changed then" in text


def test_provenance_leaves_out_what_changes_on_every_run(template) -> None:
    a = Record.from_json(upgrade(copy.deepcopy(template)))
    d = copy.deepcopy(template)
    d["run_id"], d["created"], d["duration_s"] = "other", "2027-01-01T00:00:00+00:00", 1.0
    d["system_load"] = {"before": [9, 9, 9]}
    d["launch"]["command"] = ["elsewhere"]
    assert changes([provenance(a)], [provenance(Record.from_json(upgrade(d)))]) == []
    d["software"]["packages"]["numpy"] = "0.0.1"
    d["hardware"]["tuning"]["governors"] = ["powersave"]
    found = [c.text() for c in changes([provenance(a)], [provenance(Record.from_json(upgrade(d)))])]
    assert found == [f"package:numpy {template['software']['packages']['numpy']} -> 0.0.1",
                     'tuning:governors unset -> ["powersave"]']


def test_history_refuses_bad_input(harness_cli, tmp_path) -> None:
    r = harness_cli("history", str(tmp_path / "missing"))
    assert r.returncode == 2 and "no such results file" in r.stderr
    (tmp_path / "f").write_text("")
    r = harness_cli("history", str(ROOT / "gallery" / "amd-epyc-zen4-2c"), "--plot", str(tmp_path / "f"))
    assert r.returncode == 2 and "--plot" in r.stderr and "not a folder" in r.stderr
    r = harness_cli("history", str(ROOT / "gallery" / "amd-epyc-zen4-2c"), "--workload", "nosuch")
    assert r.returncode == 2 and "no series" in r.stderr


# -- asv ----------------------------------------------------------------------------------------------

def _git(repo: pathlib.Path, *args: str) -> str:
    out = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=True,
                         env={"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
                              "GIT_COMMITTER_EMAIL": "t@t", "PATH": "/usr/bin:/bin"})
    return out.stdout.strip()


@pytest.mark.slow
def test_export_asv_then_asv_publish_draws_the_same_series(harness_cli, real_series, tmp_path) -> None:
    """The eight real runs, each given a commit of a scratch repository (the runs themselves were all
    made at this checkout's commit, and asv places results by commit), exported and published by
    the asv in the venv: its graph holds the same medians, in the same order, as `harness history`,
    and the claim's track graph the measured values."""
    asv = pathlib.Path(sys.executable).parent / "asv"
    if not asv.exists() or shutil.which("git") is None:
        pytest.skip("asv or git missing")
    repo = tmp_path / "project"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    (repo / "asv.conf.json").write_text(json.dumps({
        "version": 1, "project": "p", "project_url": "https://example.invalid", "repo": ".", "branches": ["main"],
        "environment_type": "existing", "results_dir": "results", "html_dir": "html"}))
    records = [rec for folder in real_series for rec in read_jsonl(folder / "results.jsonl")]
    commits = []
    for i, rec in enumerate(records):
        (repo / "n").write_text(str(i))
        _git(repo, "add", "-A")
        _git(repo, "commit", "-q", "-m", f"c{i}", "--date", f"2026-01-{i + 1:02d}T00:00:00")
        commits.append(_git(repo, "rev-parse", "HEAD"))
        rec["software"]["git"] = {"commit": commits[-1], "dirty": False}
        for v in rec["claims"]:      # the GEMM's error is 0.0 in every run here: distinct values show the order
            v["measured"] = (i + 1) * 1e-13
    data = tmp_path / "records"
    data.mkdir()
    (data / "results.jsonl").write_text("".join(json.dumps(rec) + "\n" for rec in records))

    r = harness_cli("export-asv", str(data), "--config", str(repo / "asv.conf.json"))
    assert r.returncode == 0, r.stdout + r.stderr
    assert len(list((repo / "results").glob("*/*-hpml-harness-records.json"))) == 8
    pub = subprocess.run([str(asv), "publish", "--config", str(repo / "asv.conf.json")], cwd=repo,
                         capture_output=True, text=True, timeout=300)
    assert pub.returncode == 0, pub.stdout[-3000:] + pub.stderr[-3000:]
    index = json.loads((repo / "html" / "index.json").read_text())
    assert "harness_records.roofline" in index["benchmarks"]
    (graph,) = [g for g in (repo / "html" / "graphs").rglob("harness_records.roofline.json")
                if "branch-main" in g.parts]
    published = [v[0] for _, v in json.loads(graph.read_text())]   # one value per case: one case here

    hist = harness_cli("history", str(data), "--json")
    medians = [p["median_s"] for p in json.loads(hist.stdout)[0]["points"]]
    assert published == pytest.approx(medians, rel=1e-9)
    # each claim the records judged is a track benchmark beside it: its measured value, run by run
    claim = "harness_claims.roofline.gemm_max_rel_error_le_1e_10"
    assert index["benchmarks"][claim]["type"] == "track"
    (track,) = [g for g in (repo / "html" / "graphs").rglob(f"{claim}.json") if "branch-main" in g.parts]
    measured = [next(v["measured"] for v in rec["claims"] if v["metric"] == "gemm_max_rel_error") for rec in records]
    assert [v[0] for _, v in json.loads(track.read_text())] == pytest.approx(measured, rel=1e-9)
    assert measured == sorted(set(measured))

    # every run kept its commit, so a record whose commit the repository lacks is left out, with why
    records[0]["software"]["git"]["commit"] = "f" * 40
    (data / "results.jsonl").write_text("".join(json.dumps(rec) + "\n" for rec in records))
    again = harness_cli("export-asv", str(data), "--config", str(repo / "asv.conf.json"))
    assert again.returncode == 0 and "1 record(s) left out: commit not in" in " ".join(again.stderr.split())


def test_export_asv_refuses_a_missing_config(harness_cli, tmp_path) -> None:
    r = harness_cli("export-asv", str(ROOT / "gallery" / "amd-epyc-zen4-2c"), "--config", str(tmp_path / "no.json"))
    assert r.returncode == 2 and "asv configuration" in r.stderr


def test_a_hostile_record_costs_only_its_own_run(template, tmp_path, harness_cli) -> None:
    """Zero timings (the schema refuses negative ones) and a missing commit make no point (the run
    is listed, not fitted); a torn line is named; history reads the rest and exits 0 on a series
    without a step."""
    lines = []
    for i, rec in enumerate(_seeded_records(template, 6, 0)):
        d = rec.to_json()
        if i == 2:
            d["samples"] = [0.0, 0.0, 0.0]
            d["software"]["git"] = {"commit": None, "dirty": None}
        lines.append(json.dumps(d))
    (tmp_path / "r.jsonl").write_text("\n".join(lines) + "\n{torn line\n")
    r = harness_cli("history", str(tmp_path / "r.jsonl"), "--json")
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr
    (series,) = json.loads(r.stdout)
    assert len(series["points"]) == 6 and series["points"][2]["median_s"] is None
    assert "r.jsonl:7" in r.stderr        # the torn line is named


def test_a_variable_a_library_sets_on_import_does_not_reach_the_cases() -> None:
    """Found by `harness history` on real records: scikit-learn's import sets KMP_DUPLICATE_LIB_OK in
    its importer's process, so cases launched after the harness imported it (under `harness capture`)
    inherited it and others did not. Cases inherit the environment the harness started with; a value
    the user set is kept."""
    code = ("import os, harness, sklearn; from harness.software import inherited_environment as e; "
            "print(os.environ.get('KMP_DUPLICATE_LIB_OK'), e().get('KMP_DUPLICATE_LIB_OK'))")
    env = {k: v for k, v in os.environ.items() if k != "KMP_DUPLICATE_LIB_OK"}
    run = lambda: subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,  # noqa: E731
                                 timeout=120).stdout.split()
    assert run() == ["True", "None"]
    env["KMP_DUPLICATE_LIB_OK"] = "FALSE"
    assert run() == ["FALSE", "FALSE"]
