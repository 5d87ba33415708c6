"""Records where performance analysts work: `harness export-thicket` writes Caliper JSON-split
profiles that LLNL's Thicket reads, one metadata row per profile, the phases' seconds as the
harness reports them.

Thicket (llnl-thicket) pins pandas below 3, which the harness's own environment has, so it lives
in an environment of its own: the `analysis` extra (docs/analysis.md). The loading runs in the
interpreter ``HARNESS_ANALYSIS_PYTHON`` names (.ci/run makes one), or in this one where Thicket is
importable here; otherwise the test is skipped, saying how to get one."""
from __future__ import annotations

import importlib.util
import json
import os
import pathlib
import re
import statistics
import subprocess
import sys

import pytest

from harness.export.thicket import VALUE_COLUMNS, profile
from harness.results.store import load_records

ROOT = pathlib.Path(__file__).resolve().parent.parent
MACHINES = sorted(p for p in (ROOT / "gallery").iterdir() if p.is_dir())   # gallery/*: three machines

# Run in the analysis environment: the profiles into a Thicket, grouped by machine, printed back.
LOAD = r"""
import glob, json, sys
import thicket as th
tk = th.Thicket.from_caliper(sorted(glob.glob(sys.argv[1] + "/*.json")), disable_tqdm=True)
meta = tk.metadata.reset_index()
frame = tk.dataframe.reset_index()
frame["phase"] = [n.frame["name"] for n in frame["node"]]
frame = frame.merge(meta[["profile", "machine", "workload", "record_id"]], on="profile")
out = {"profiles": len(meta), "metadata_columns": sorted(meta.columns),
       "machines": sorted(meta["machine"].unique()),
       "times": {f"{i}|{p}": t for i, p, t in zip(frame["record_id"], frame["phase"], frame["time (inc)"]) if t == t},
       "by_machine": {m: len(g) for m, g in meta.groupby("machine")}}
# Thicket's own grouping: one sub-thicket per machine, the median over its profiles per workload and phase
out["medians"] = {}
for machine, sub in tk.groupby("machine").items():
    df = sub.dataframe.reset_index()
    df["phase"] = [n.frame["name"] for n in df["node"]]
    df = df.merge(sub.metadata.reset_index()[["profile", "workload"]], on="profile")
    for (workload, phase), g in df.groupby(["workload", "phase"]):
        values = g["time (inc)"].dropna()
        if len(values):
            out["medians"][f"{machine}|{workload}|{phase}"] = float(values.median())
print(json.dumps(out))
"""


def analysis_python() -> str:
    given = os.environ.get("HARNESS_ANALYSIS_PYTHON")
    if given:
        return given
    if importlib.util.find_spec("thicket") is None:
        pytest.skip("Thicket is not installed here: pip install 'hpml-harness[analysis]' in an environment of "
                    "its own and set HARNESS_ANALYSIS_PYTHON to its python (.ci/run does)")
    return sys.executable


def test_a_profile_is_json_split_with_the_phases_as_the_tree() -> None:
    records, _ = load_records([MACHINES[1]])
    rec = next(r for r in records if r.ok and r.comm is not None and r.comm.ops and "comm" in r.phases)
    prof = profile(rec)
    assert prof["columns"][:2] == ["Node order", "path"] and prof["columns"][2:len(VALUE_COLUMNS) + 2] == VALUE_COLUMNS
    assert [m["is_value"] for m in prof["column_metadata"]] == [False, False] + [True] * (len(prof["columns"]) - 2)
    assert [row[0] for row in prof["data"]] == [row[1] for row in prof["data"]] == list(range(len(prof["nodes"])))
    labels = [n["label"] for n in prof["nodes"]]
    assert labels[0] == rec.workload.name and "parent" not in prof["nodes"][0]
    assert set(rec.phases) <= set(labels) and set(rec.comm.ops) <= set(labels)
    comm = labels.index("comm")
    assert all(prof["nodes"][labels.index(op)]["parent"] == comm for op in rec.comm.ops)
    by_label = {labels[row[1]]: dict(zip(prof["columns"], row)) for row in prof["data"]}
    for name, phase in rec.phases.items():
        assert by_label[name]["time (inc)"] == phase.max_s
    # the comm phase's own time is what its calls did not take; inclusive keeps the whole
    calls = sum(by_label[op]["time (inc)"] for op in rec.comm.ops)
    assert by_label["comm"]["time"] == pytest.approx(max(0.0, rec.phases["comm"].max_s - calls))
    assert prof["machine_key"] == rec.machine_key and prof["workload"] == rec.workload.name
    assert prof["version"] == rec.work_version and json.loads(prof["params"]) == rec.params
    json.dumps(prof, allow_nan=False)


def test_thicket_reads_the_export_of_two_machines_with_the_harness_phase_times(harness_cli, tmp_path) -> None:
    python = analysis_python()
    out = tmp_path / "t"
    r = harness_cli("export-thicket", *map(str, MACHINES), "--out", str(out))
    assert r.returncode == 0, r.stdout + r.stderr
    records, _ = load_records(MACHINES)
    ok = [rec for rec in records if rec.ok and rec.samples]
    assert f"wrote {len(ok)} profile(s) of {len(records)} record(s)" in r.stdout
    assert len(list(out.glob("*.json"))) == len(ok)
    again = harness_cli("export-thicket", *map(str, MACHINES), "--out", str(out))   # same records, same files
    assert again.returncode == 0 and len(list(out.glob("*.json"))) == len(ok)

    proc = subprocess.run([python, "-c", LOAD, str(out)], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    assert got["profiles"] == len(ok)
    assert {"machine", "machine_key", "workload", "version", "size", "params", "ranks", "threads", "backend",
            "library", "commit", "run_id", "date"} <= set(got["metadata_columns"])
    assert got["machines"] == sorted({rec.machine for rec in ok})
    assert got["by_machine"] == {m: sum(rec.machine == m for rec in ok) for m in got["machines"]}
    # every phase of every record, as Thicket holds it, is the harness's own figure
    for rec in ok:
        for name, phase in rec.phases.items():
            assert got["times"][f"{rec.id}|{name}"] == pytest.approx(phase.max_s, rel=1e-12)
    # grouped by machine in Thicket: the per-phase medians of each workload are the harness's
    expected: dict[str, list[float]] = {}
    for rec in ok:
        for name, phase in rec.phases.items():
            expected.setdefault(f"{rec.machine}|{rec.workload.name}|{name}", []).append(phase.max_s)
    assert set(got["medians"]) >= set(expected) and len(expected) > 20
    for key, values in expected.items():
        assert got["medians"][key] == pytest.approx(statistics.median(values), rel=1e-12), key


def test_bad_input_is_exit_2_and_writes_nothing(harness_cli, tmp_path) -> None:
    (tmp_path / "file").write_text("x")
    r = harness_cli("export-thicket", str(MACHINES[0]), "--out", str(tmp_path / "file"))
    assert r.returncode == 2 and "is a file" in r.stderr
    r = harness_cli("export-thicket", str(tmp_path / "nothing-here"), "--out", str(tmp_path / "t"))
    assert r.returncode == 2 and not (tmp_path / "t").exists()


# Extra-P's own Python API over the JSON Lines `harness model --out` wrote: the same fit.
FIT = r"""
import glob, json, sys
from extrap.entities.measurement import Measure
from extrap.fileio.file_reader.jsonlines_file_reader import read_jsonlines_file
from extrap.modelers.model_generator import ModelGenerator
from extrap.util.string_formats import FunctionFormats
out = {}
for path in sorted(glob.glob(sys.argv[1] + "/*.jsonl")):
    experiment = read_jsonlines_file(path)
    generator = ModelGenerator(experiment, modeler="default", use_measure=Measure.MEDIAN)
    setattr(generator.modeler, "allow_negative_exponents", True)
    generator.model_all()
    for (callpath, metric), model in generator.models.items():
        out[f"{callpath.name}|{metric.name}"] = model.hypothesis.function.to_string(
            *experiment.parameters, format=FunctionFormats.PYTHON)
print(json.dumps(out))
"""


def extrap_command() -> str:
    import shutil

    found = os.environ.get("HARNESS_EXTRAP") or shutil.which("extrap")
    if not found:
        pytest.skip("Extra-P is not installed here: pip install extrap in an environment of its own and set "
                    "HARNESS_EXTRAP to its extrap command (.ci/run does)")
    return found


@pytest.mark.mpi
def test_model_fits_sweeps_with_extrap_warns_below_five_by_five_and_extrap_reads_the_export(harness_cli, tmp_path) -> None:
    extrap = extrap_command()
    sweep = tmp_path / "sweep"
    r = harness_cli("run", "--workload", "roofline", "--size", "smoke", "--param", "triad_mib=4,8,16,32,64",
                    "--param", "gemm_sizes=64", "--param", "dtypes=fp64", "--param", "gemm_reps=1", "--repeats", "5",
                    "--out", str(sweep))
    assert r.returncode == 0, r.stdout + r.stderr
    r = harness_cli("run", "--workload", "dpmm", "--size", "smoke", "--ranks", "1,2", "--threads", "1", "--repeats", "3",
                    "--out", str(sweep))
    assert r.returncode in (0, 1), r.stdout + r.stderr
    env = {"COLUMNS": "400", "HARNESS_EXTRAP": extrap}
    jl = tmp_path / "jl"
    size = harness_cli("model", str(sweep), "--x", "triad_mib", "--predict", "triad_mib=1024", "--out", str(jl), env=env)
    assert size.returncode == 0, size.stdout + size.stderr
    (line,) = [ln for ln in size.stdout.splitlines() if "│ roofline " in ln and "│ time " in ln]
    cells = [c.strip() for c in line.split("│")[1:-1]]
    formula, smape, ar2, shape = cells[3], float(cells[4]), float(cells[5]), cells[6]
    predicted, low, high = (float(v) for v in re.fullmatch(r"(\S+) \[(\S+), (\S+)\]", cells[7]).groups())
    assert "triad_mib" in formula and 0 <= smape < 200 and ar2 <= 1 and shape == "5 x 5"
    assert low <= predicted <= high and predicted > 0
    assert "below Extra-P's" not in size.stderr                        # 5 points x 5 repetitions
    ranks = harness_cli("model", str(sweep), "--x", "ranks", env=env)
    assert ranks.returncode == 0, ranks.stdout + ranks.stderr
    assert "dpmm" in ranks.stdout and "ranks" in ranks.stdout
    assert "2 x 3 (points x repetitions) is below Extra-P's 5 x 5" in ranks.stderr
    # the JSON Lines kept are Extra-P's own input: its reader and modeller give the same formula
    proc = subprocess.run([str(pathlib.Path(extrap).with_name("python")), "-c", FIT, str(jl)],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert json.loads(proc.stdout.strip().splitlines()[-1])["roofline|time"] == formula
    # the html report draws each sweep's points with Extra-P's curve, its formula in the caption
    html = tmp_path / "r.html"
    r = harness_cli("report", str(sweep), "--out", str(html), "--models", "triad_mib,ranks", env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    page = html.read_text()
    assert "Scaling models (Extra-P)" in page
    assert page.count("seconds per repeat against triad_mib") == 1 and page.count("seconds per repeat against ranks") == 1
    assert f"<li>model: {formula}</li>" in page
    r = harness_cli("report", str(sweep), "--models", "ranks", env=env)
    assert r.returncode == 2 and "--out FILE.html" in r.stderr
    # without Extra-P: exit 2 saying how to get it
    missing = harness_cli("model", str(sweep), "--x", "ranks", "--extrap", str(tmp_path / "no-extrap"))
    assert missing.returncode == 2 and "pipx install extrap" in missing.stderr


def test_the_model_formula_evaluator_takes_arithmetic_and_refuses_code() -> None:
    from harness.export.extrap import evaluate

    assert evaluate("0.12+9.9*p**(-1)", "p", 4) == pytest.approx(0.12 + 9.9 / 4)
    assert evaluate("1.5*log2(p)**(1)*p**(1/2)", "p", 16) == pytest.approx(1.5 * 4 * 4)
    for bad in ("__import__('os').system('true')", "p.real", "open('x')", "[p]"):
        with pytest.raises(ValueError, match="not a model formula"):
            evaluate(bad, "p", 2)
