"""``harness capture``: a self-describing folder per machine, resumable, never written over."""
from __future__ import annotations

import json
import pathlib
import re
import subprocess
import sys

import pytest

from conftest import read_jsonl
from harness.hardware.identity import identity
from harness.report.machines import by_machine
from harness.results.frame import load

SUITE = """description = "one roofline case at smoke size"
[[case]]
workload = "roofline"
size = "smoke"
repeats = 2
warmup = 0
"""


def test_capture_writes_info_records_and_manifest_then_resumes(harness_cli, tmp_path) -> None:
    suite = tmp_path / "tiny.toml"
    suite.write_text(SUITE)
    out = tmp_path / "cap"
    proc = harness_cli("capture", str(out), "--suite", str(suite), "--note", "test machine")
    assert proc.returncode == 0, proc.stderr
    manifest = json.loads((out / "manifest.json").read_text())
    info = json.loads((out / "info.json").read_text())
    assert manifest["schema"] == "hpml-harness/capture-v1"
    assert manifest["ended"] == "complete" and manifest["records"] == {"ok": 1}
    assert manifest["note"] == "test machine" and manifest["suites"] == [str(suite)]
    # the suite has the roofline (no extra roofline run); then its claims' controls at the suite's size
    assert manifest["runs"] == [{"what": f"--suite {suite}", "exit": 0},
                                {"what": "controls --size smoke --workload roofline", "exit": 0}]
    (control,) = read_jsonl(out / "controls" / "results.jsonl")
    assert control["control"]["role"] == "control" and control["size"] == "smoke"
    assert [c["status"] for c in control["claims"] if c["control"]] == ["fail"]
    # the machine is named by its identity (the label, e.g. "Intel Xeon (icelake+AMX), 2 vCPU, VM" for a
    # VM whose CPU string is the generic "Intel(R) Xeon(R) Processor"), not by the raw CPU string
    me = identity(info["hardware"])
    assert manifest["machine"] == me["label"] and manifest["machine_key"] == me["key"]
    assert [r["workload"]["name"] for r in read_jsonl(out / "results" / "results.jsonl")] == ["roofline"]
    assert (out / "README.txt").is_file()

    again = harness_cli("capture", str(out), "--suite", str(suite))
    assert again.returncode == 0, again.stderr
    assert "1 of 1 cases already ok" in again.stdout
    second = json.loads((out / "manifest.json").read_text())
    assert second["earlier"][0]["started"] == manifest["started"]
    assert len(read_jsonl(out / "results" / "results.jsonl")) == 1
    # the report of the capture lists each claim under its control, the latest verdict once
    assert len(read_jsonl(out / "controls" / "results.jsonl")) == 2
    report = harness_cli("report", str(out))
    assert report.returncode == 0, report.stderr
    section = report.stdout.split("## Controls at the verdict's size")[1].split("\n## ")[0]
    rows = [ln for ln in section.splitlines() if ln.startswith("| ") and "roofline" in ln]
    assert len(rows) == 1 and "| gemm_max_rel_error <= 1e-10 | smoke |" in rows[0] and "caught (fail)" in rows[0]
    # --no-controls: the suites alone
    bare = tmp_path / "bare"
    assert harness_cli("capture", str(bare), "--suite", str(suite), "--no-controls").returncode == 0
    assert not (bare / "controls").exists()
    assert "## Controls at" not in harness_cli("report", str(bare)).stdout


def test_capture_refuses_a_folder_that_is_not_a_capture_of_this_machine(harness_cli, tmp_path) -> None:
    other = tmp_path / "other"
    other.mkdir()
    (other / "notes.txt").write_text("mine")
    proc = harness_cli("capture", str(other), "--suite", "smoke")
    assert proc.returncode == 2 and "is not a capture" in proc.stderr
    assert sorted(p.name for p in other.iterdir()) == ["notes.txt"]

    foreign = tmp_path / "foreign"
    foreign.mkdir()
    text = json.dumps({"schema": "hpml-harness/capture-v1", "machine": "IBM POWER9, 160 usable CPUs, ppc64le"})
    (foreign / "manifest.json").write_text(text)
    proc = harness_cli("capture", str(foreign), "--suite", "smoke")
    assert proc.returncode == 2 and "holds another machine (IBM POWER9" in proc.stderr
    assert (foreign / "manifest.json").read_text() == text


def test_capture_refuses_a_bad_suite_before_writing(harness_cli, tmp_path) -> None:
    out = tmp_path / "cap"
    proc = harness_cli("capture", str(out), "--suite", "no-such-suite")
    assert proc.returncode == 2 and "no-such-suite" in proc.stderr
    assert not out.exists()


def test_gallery_captures_are_complete() -> None:
    """Every machine in gallery/ is a finished capture whose records are readable."""
    gallery = pathlib.Path(__file__).resolve().parent.parent / "gallery"
    machines = [p for p in gallery.iterdir() if p.is_dir()]
    assert machines
    for folder in machines:
        manifest = json.loads((folder / "manifest.json").read_text())
        assert manifest["ended"] == "complete", folder
        records = read_jsonl(folder / "results" / "results.jsonl")
        assert sum(manifest["records"].values()) == len(records), folder
        hardware = json.loads((folder / "info.json").read_text())["hardware"]
        if "machine_key" in manifest:     # captures from the machine-identity protocol on
            assert identity(hardware)["key"] == manifest["machine_key"], folder
            assert {r["machine"]["key"] for r in records if r["schema_version"] >= 4} == {manifest["machine_key"]}
        else:
            assert hardware["cpu"]["model"] in manifest["machine"]


def stale_marks(text: str) -> dict[str, str]:
    """docs/gallery.md's "- `folder`: stale: why" lines, folder -> why."""
    return {m.group(1): m.group(2) for m in re.finditer(r"^- `([^`]+)`: stale: (.+)$", text, re.M)}


def test_gallery_captures_match_the_code_or_are_marked_stale() -> None:
    """A capture's records measured the workloads at the versions its manifest names; when the
    code here makes another version of a workload the capture ran, the capture is stale: it must
    be recaptured or marked stale in docs/gallery.md (with the workloads that changed), so a
    protocol change never leaves the gallery silently comparing other work."""
    from harness.commands.common import registry
    from harness.results.record import Record, upgrade
    from harness.work_identity import current_work_version

    root = pathlib.Path(__file__).resolve().parent.parent
    marks = stale_marks((root / "docs" / "gallery.md").read_text())
    reg = registry()
    current = {name: current_work_version(reg.workload(name)) for name in reg.workloads}
    for folder in (p for p in (root / "gallery").iterdir() if p.is_dir()):
        records = read_jsonl(folder / "results" / "results.jsonl")
        # the protocol version each record measured (mapped through plugins/versions.lock for
        # records that carry only a source hash): the work, not the file bytes, decides
        work = {r["workload"]["name"]: Record.from_json(upgrade(r)).work_version for r in records}
        ran = {r["workload"]["name"]: r["workload"].get("version", "") for r in records}
        changed = sorted(w for w, v in work.items() if w in current and v != current[w])
        if folder.name in marks:
            assert changed, f"{folder.name} is marked stale in docs/gallery.md but matches the code: remove the mark"
            assert all(w in marks[folder.name] for w in changed), (folder.name, changed, marks[folder.name])
        else:
            assert not changed, (f"gallery/{folder.name} ran other versions of {changed} than the code makes: "
                                 "recapture it (harness capture) or mark it stale in docs/gallery.md")
        manifest = json.loads((folder / "manifest.json").read_text())
        if "workload_versions" in manifest:
            assert all(manifest["workload_versions"].get(w) == v for w, v in ran.items() if v), folder.name


def _copied_roofline(tmp_path: pathlib.Path) -> tuple[pathlib.Path, dict[str, str]]:
    """The built-in roofline plugin copied under another name (a third-party package on
    PYTHONPATH): (its __init__.py, the environment that registers it)."""
    import os
    import shutil

    root = pathlib.Path(__file__).resolve().parent.parent
    pkg = tmp_path / "site" / "copied_roofline"
    shutil.copytree(root / "plugins" / "roofline", pkg, ignore=shutil.ignore_patterns("__pycache__"))
    init = pkg / "__init__.py"
    init.write_text(init.read_text().replace('name = "roofline"', 'name = "roofline_copy"')
                    .replace("harness_plugins.roofline.", "copied_roofline."))
    dist = tmp_path / "site" / "copied_roofline-0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: copied-roofline\nVersion: 0\n")
    (dist / "entry_points.txt").write_text("[harness.plugins]\ncopied_roofline = copied_roofline\n")
    return init, {**os.environ, "PYTHONPATH": str(tmp_path / "site")}


def _harness(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "harness", *args], capture_output=True, text=True, env=env,
                          timeout=300)


def _claim_cells(report: str, claim: str) -> list[str]:
    """The cells of one claim's row in a Markdown report's "Claims per machine" table."""
    line = next(l for l in report.splitlines() if l.startswith(f"| roofline_copy: {claim} |"))
    return [c.strip() for c in line.strip("|").split("|")][1:]


@pytest.mark.slow
def test_an_edited_claim_keeps_records_comparable_and_rejudges_them(tmp_path) -> None:
    """Issue 53: a copy of a built-in plugin, run; then its claim's threshold and its docstring
    edited: the lock check fails until the author locks the edit as the same work; then the old
    and the new records are compared side by side, and the old record's claim is judged again
    by the new threshold from its stored replicates."""
    init, env = _copied_roofline(tmp_path)
    assert _harness(env, "lock", "roofline_copy", "--reason", "first version").returncode == 0
    assert _harness(env, "lock", "--check", "roofline_copy").returncode == 0

    def run(out: str, machine: str) -> None:
        proc = _harness(env, "run", "--workload", "roofline_copy", "--size", "smoke", "--repeats", "2",
                        "--out", str(tmp_path / out), "--machine-name", machine)
        assert proc.returncode == 0, proc.stderr[-2000:]

    run("old", "node-a")
    text = init.read_text()
    assert '"<=", 1e-10' in text
    init.write_text(text.replace('"<=", 1e-10', '"<=", -1.0').replace('"""Workload roofline:', '"""Edited. Workload roofline:'))
    check = _harness(env, "lock", "--check", "roofline_copy")
    assert check.returncode == 1 and "NOT LOCKED" in check.stdout, check.stdout
    assert _harness(env, "lock", "roofline_copy", "--reason", "a threshold").returncode == 2   # not a bump: say so
    assert _harness(env, "lock", "roofline_copy", "--same-work", "--reason", "a threshold and a docstring").returncode == 0
    assert _harness(env, "lock", "--check", "roofline_copy").returncode == 0
    run("new", "node-b")
    old, new = (read_jsonl(tmp_path / d / "results.jsonl")[0]["workload"] for d in ("old", "new"))
    assert old["version"] != new["version"] and old["protocol_version"] == new["protocol_version"] == "1"
    assert old["work"]["digest"] == new["work"]["digest"]
    wide = by_machine(load([tmp_path / "old", tmp_path / "new"]))
    (row,) = wide.to_dict("records")
    assert row["node-b | speedup_vs_ref"] > 0 and not wide.attrs["different_protocol"]
    report = _harness(env, "report", str(tmp_path / "old"), str(tmp_path / "new"), "--out", str(tmp_path / "r.md"))
    assert report.returncode == 0, report.stderr
    cells = _claim_cells((tmp_path / "r.md").read_text(), "gemm_max_rel_error <= -1")
    assert cells == ["FAIL", "FAIL"], cells       # the old record passed 1e-10; -1 judges it again
    assert read_jsonl(tmp_path / "old" / "results.jsonl")[0]["claims"][0]["status"] == "pass"   # kept as written


@pytest.mark.slow
def test_an_edited_data_generator_needs_a_new_protocol_version(tmp_path) -> None:
    """Issue 53: the copy's data generator edited: the lock check fails, and a --same-work lock
    is no way out of it being decided; with protocol_version bumped and locked, the records are
    listed as a different protocol, never compared."""
    init, env = _copied_roofline(tmp_path)
    assert _harness(env, "lock", "roofline_copy", "--reason", "first version").returncode == 0
    run = lambda out, m: _harness(env, "run", "--workload", "roofline_copy", "--size", "smoke", "--repeats", "2",  # noqa: E731
                                  "--out", str(tmp_path / out), "--machine-name", m)
    assert run("old", "node-a").returncode == 0
    text = init.read_text()
    assert "rng.standard_normal((n, n))" in text
    init.write_text(text.replace("rng.standard_normal((n, n))", "rng.uniform(-1, 1, (n, n))"))
    check = _harness(env, "lock", "--check")
    assert check.returncode == 1 and "bump protocol_version" in check.stdout
    init.write_text(init.read_text().replace('protocol_version = "1"', 'protocol_version = "2"'))
    assert _harness(env, "lock", "roofline_copy", "--same-work", "--reason", "x").returncode == 2   # a bump is not the same work
    assert _harness(env, "lock", "roofline_copy", "--reason", "uniform inputs").returncode == 0
    assert _harness(env, "lock", "--check", "roofline_copy").returncode == 0
    assert run("new", "node-c").returncode == 0
    wide = by_machine(load([tmp_path / "old", tmp_path / "new"]))
    (row,) = wide.to_dict("records")
    assert "node-c | median_s" not in row       # the new protocol is not compared
    ((case, versions_seen),) = wide.attrs["different_protocol"]
    assert versions_seen == {"pv:1": ["node-a"], "pv:2": ["node-c"]}


def test_the_built_in_plugins_are_locked() -> None:
    """Every built-in workload declares a protocol version, and its code is locked under it in
    plugins/versions.lock: an edit fails here until its author decides (harness lock)."""
    from harness.commands.common import registry
    from harness.work_identity import lock_state

    reg = registry()
    states = [lock_state(reg.workload(n)) for n in sorted(reg.workloads)]
    assert all(s.protocol_version for s in states), [s.workload for s in states if not s.protocol_version]
    assert all(s.lock_file and s.lock_file.name == "versions.lock" and s.lock_file.parent.name == "plugins"
               for s in states)
    problems = [s.problem() for s in states if not s.ok]
    assert not problems, "\n".join(problems)


def test_records_that_carry_only_a_source_hash_map_to_their_protocol_version() -> None:
    """The gallery's captures predate declared versions: the lock maps their hashes, so the Zen 4
    and Intel captures compare where the work was the same (bragg_unet, kfac: edits of controls
    only) and stay apart where it changed (psgd_svm's compiled epoch)."""
    from harness.work_identity import comparable_version

    assert comparable_version("bragg_unet", "8b09fedf87", "") == comparable_version("bragg_unet", "c07923fd38", "") == "pv:4"
    assert comparable_version("kfac", "4d7f15ccfa", "") == comparable_version("kfac", "b4a82e71f6", "") == "pv:3"
    assert comparable_version("psgd_svm", "9c7ae5ca75", "") == "pv:1" != comparable_version("psgd_svm", "eaca21a12d", "")
    assert comparable_version("third_party", "0123456789", "") == "0123456789"    # no lock: the hash decides
