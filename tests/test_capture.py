"""``harness capture``: a self-describing folder per machine, resumable, never written over."""
from __future__ import annotations

import json
import pathlib

from conftest import read_jsonl

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
    assert info["hardware"]["cpu"]["model"] in manifest["machine"]
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
        assert json.loads((folder / "info.json").read_text())["hardware"]["cpu"]["model"] in manifest["machine"]
