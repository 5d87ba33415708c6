"""``harness capture``: a self-describing folder per machine, resumable, never written over."""
from __future__ import annotations

import json
import pathlib
import re

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
    assert manifest["runs"] == [{"what": f"--suite {suite}", "exit": 0}]   # the suite has the roofline
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
    from harness.commands.capture import workload_versions

    root = pathlib.Path(__file__).resolve().parent.parent
    marks = stale_marks((root / "docs" / "gallery.md").read_text())
    current = workload_versions()
    for folder in (p for p in (root / "gallery").iterdir() if p.is_dir()):
        records = read_jsonl(folder / "results" / "results.jsonl")
        ran = {r["workload"]["name"]: r["workload"].get("version", "") for r in records}
        changed = sorted(w for w, v in ran.items() if w in current and v != current[w])
        if folder.name in marks:
            assert changed, f"{folder.name} is marked stale in docs/gallery.md but matches the code: remove the mark"
            assert all(w in marks[folder.name] for w in changed), (folder.name, changed, marks[folder.name])
        else:
            assert not changed, (f"gallery/{folder.name} ran other versions of {changed} than the code makes: "
                                 "recapture it (harness capture) or mark it stale in docs/gallery.md")
        manifest = json.loads((folder / "manifest.json").read_text())
        if "workload_versions" in manifest:
            assert all(manifest["workload_versions"].get(w) == v for w, v in ran.items() if v), folder.name


def test_a_changed_plugin_source_changes_its_version_and_unmatches_its_records(tmp_path) -> None:
    """The issue's check: a copy of a plugin under another name, run, then its source changed:
    the version differs, and side by side the new record is not compared with the old one but
    listed once as a different protocol."""
    import shutil
    import subprocess
    import sys

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
    env = {**__import__("os").environ, "PYTHONPATH": str(tmp_path / "site")}

    def run(out: str, machine: str) -> None:
        proc = subprocess.run([sys.executable, "-m", "harness", "run", "--workload", "roofline_copy", "--size",
                               "smoke", "--repeats", "2", "--out", str(tmp_path / out), "--machine-name", machine],
                              capture_output=True, text=True, env=env, timeout=300)
        assert proc.returncode == 0, proc.stderr[-2000:]

    run("old", "node-a")
    run("same", "node-b")
    init.write_text(init.read_text() + "\n# a protocol change\n")
    run("new", "node-c")
    versions = {d: read_jsonl(tmp_path / d / "results.jsonl")[0]["workload"]["version"] for d in ("old", "same", "new")}
    assert versions["old"] == versions["same"] != versions["new"]
    wide = by_machine(load([tmp_path / "old", tmp_path / "same", tmp_path / "new"]))
    assert wide.attrs["machines"] == ["node-a", "node-b", "node-c"]
    (row,) = wide.to_dict("records")
    assert "node-b | speedup_vs_ref" in row and "node-c | median_s" not in row   # the new version is not compared
    ((case, versions_seen),) = wide.attrs["different_protocol"]
    assert versions_seen == {versions["old"]: ["node-a", "node-b"], versions["new"]: ["node-c"]}
