"""Nothing in a record, a plugin or the environment can inject into what the harness prints or writes
(issue 44): terminal escapes, Markdown structure, spreadsheet formulas, Slurm patterns, lone
surrogates, and writes outside a capture folder. Each test failed on the code before the fix."""
from __future__ import annotations

import json
import os
import pathlib

import pytest

from conftest import read_jsonl
from fixtures.hostile_plugins import loud_plugin
from fixtures.output_family import (PAYLOADS, junit_breaches, probes, run_probe,
                                    terminal_breaches, write_results)
from harness.output.safe_text import csv_cell, markdown_cell, one_line, slurm_filename, visible


def test_each_output_kind_has_one_escaping_function() -> None:
    assert visible("a\x1b]0;t\x07b\nc\td") == "a\\x1b]0;t\\x07b\nc\td"
    assert one_line("a\nb\r\tc\u202e\ud800") == "a\\nb\\r\\tc\\u202e\\ud800"
    assert visible("\x9b31m") == "\\x9b31m"
    assert markdown_cell("a|b") == "a\\|b" and markdown_cell("a\\|b") == "a\\\\\\|b"
    assert markdown_cell("![x](http://e/p.png)") == "![x\\](http://e/p.png)"
    assert markdown_cell("<img src=x> <= 3") == "&lt;img src=x> <= 3"
    assert markdown_cell("a\nb") == "a\\\\nb"      # shown as the text a\nb, on one row
    assert [csv_cell(x) for x in ("=1", "+1", "-x", "@x", "\t1", "ok", 3)] == ["'=1", "'+1", "'-x", "'@x", "'\t1",
                                                                            "ok", 3]
    assert slurm_filename("/scratch/a%j") == "/scratch/a%%j"


@pytest.fixture(scope="module")
def hostile_folders(tmp_path_factory) -> tuple[pathlib.Path, pathlib.Path, pathlib.Path]:
    work = tmp_path_factory.mktemp("hostile-outputs")
    payloads = list(PAYLOADS.values())
    write_results(work / "a", payloads, "a")
    write_results(work / "b", payloads, "b")
    return work / "a", work / "b", work


@pytest.mark.parametrize("probe", [f"{verb} -> {kind}" for verb, kind, _, _ in
                                   probes(pathlib.Path("a"), pathlib.Path("b"), pathlib.Path("w"))])
def test_record_strings_cannot_escape_any_reader_output(harness_cli, hostile_folders, probe) -> None:
    """Every payload at once (in workload, case, machine, param, metric, reason, library and claim
    strings of real records of two machines), through one verb and output kind."""
    a, b, work = hostile_folders
    ((_, _, args, check),) = [p for p in probes(a, b, work) if f"{p[0]} -> {p[1]}" == probe]
    assert run_probe(lambda *x: harness_cli(*x, timeout=300), args, check) == []


def test_plugin_strings_cannot_escape_a_run_and_junit_survives(hostile, tmp_path) -> None:
    """A plugin's metric names and failure messages carry every payload, and one a lone surrogate:
    the run prints no raw control character, that case fails with the reason, JUnit is written."""
    add, run = hostile
    # one of each kind (the campaign's family runs every payload): OSC, C1, bidi, newline, formula, surrogate
    payloads = [PAYLOADS[k] for k in ("window title (OSC)", "C1 CSI", "bidi override", "newline + heading",
                                      "formula =")] + ["\ud800"]
    add("loud_plugin", loud_plugin(payloads))
    junit = tmp_path / "junit.xml"
    which = ",".join(map(str, range(len(payloads))))
    r = run("run", "--workload", "loud", "--param", f"which={which}", "--param", "fail=0,1", "--repeats", "1",
            "--warmup", "0", "--out", str(tmp_path / "out"), "--junit", str(junit), timeout=300)
    assert r.returncode == 1 and "Traceback" not in r.stderr, r.stderr[-2000:]
    assert terminal_breaches(r.stdout + r.stderr) == []
    assert junit.is_file() and junit_breaches(junit.read_text()) == []
    records = read_jsonl(tmp_path / "out" / "results.jsonl")
    assert len(records) == 2 * len(payloads)
    lone = [x for x in records if x["params"]["which"] == len(payloads) - 1 and x["params"]["fail"] == 0]
    assert lone[0]["status"] == "failed" and "lone surrogate" in lone[0]["reason"], lone[0]["reason"]
    assert all(x["status"] == "ok" for x in records if x["params"]["fail"] == 0 and x is not lone[0])


def test_a_record_with_a_lone_surrogate_is_refused_by_every_reader_naming_line_and_field(harness_cli,
                                                                                        tmp_path) -> None:
    folder = tmp_path / "r"
    write_results(folder, ["plain"], "a")
    lines = (folder / "results.jsonl").read_text().splitlines()
    bad = json.loads(lines[0])
    bad["workload"]["name"] = "w\ud800"
    lines.append(json.dumps(bad))                  # ensure_ascii: the JSON text holds "\ud800"
    (folder / "results.jsonl").write_text("\n".join(lines) + "\n")
    for args in (["show", str(folder)], ["history", str(folder)], ["compare", str(folder), str(folder)],
                 ["report", str(folder)], ["report", str(folder), "--out", str(tmp_path / "r.html")],
                 ["report", str(folder), "--out", str(tmp_path / "r.csv")]):
        r = harness_cli(*args, timeout=300)
        assert r.returncode in (0, 1) and "Traceback" not in r.stderr, (args, r.stderr[-1500:])
        assert f"results.jsonl:{len(lines)}: workload.name holds a lone surrogate" in r.stderr, (args, r.stderr)


def test_a_non_ascii_reason_under_an_ascii_terminal_does_not_abort_the_run(hostile, tmp_path) -> None:
    add, run = hostile
    add("loud_plugin", loud_plugin(["é and ✓"]))
    r = run("run", "--workload", "loud", "--param", "fail=1,0", "--repeats", "1", "--warmup", "0",
            "--out", str(tmp_path / "out"), env={"PYTHONIOENCODING": "ascii"})
    assert "Traceback" not in r.stderr, r.stderr[-1500:]
    assert [x["status"] for x in read_jsonl(tmp_path / "out" / "results.jsonl")] == ["failed", "ok"]
    assert "\\xe9 and \\u2713" in r.stdout + r.stderr


def test_a_percent_in_out_reaches_slurm_literally(harness_cli, tmp_path) -> None:
    out = tmp_path / "run%j-%u"
    r = harness_cli("submit", "--dry-run", "--workload", "fault_slow", "--out", str(out))
    assert r.returncode == 0, r.stderr
    (line,) = [x for x in r.stdout.splitlines() if x.startswith("#SBATCH --output=")]
    assert line == f"#SBATCH --output={tmp_path}/run%%j-%%u/slurm-%j.out"


def _tree(folder: pathlib.Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("entry", ["results", "controls", "README.txt", "manifest.json"])
def test_capture_never_writes_through_a_planted_link(harness_cli, tmp_path, entry) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "keep.txt").write_text("precious")
    cap = tmp_path / "cap"
    cap.mkdir()
    (cap / "manifest.json").write_text(json.dumps({"machine": "x", "machine_key": "m-000000000000"}))
    target = elsewhere if entry in ("results", "controls") else elsewhere / "keep.txt"
    if entry == "manifest.json":
        (cap / "manifest.json").unlink()
    (cap / entry).symlink_to(target)
    before = _tree(elsewhere)
    r = harness_cli("capture", str(cap), "--suite", "smoke", timeout=120)
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr[-1500:]
    assert _tree(elsewhere) == before
    last = r.stderr.strip().splitlines()[-1]
    assert str(cap) in last and ("link" in last or "manifest" in last), last


@pytest.mark.parametrize("manifest,says", [
    ("[1, 2, 3]", "manifest.json is a JSON list, not an object"),
    ('{"machine_key": "m-1"}', "manifest.json lacks 'machine'"),
    ("{not json", "manifest.json is unreadable"),
])
def test_capture_words_a_bad_manifest(harness_cli, tmp_path, manifest, says) -> None:
    cap = tmp_path / "cap"
    cap.mkdir()
    (cap / "manifest.json").write_text(manifest)
    r = harness_cli("capture", str(cap), "--suite", "smoke", timeout=120)
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr[-1500:]
    assert says in r.stderr.strip().splitlines()[-1], r.stderr
    assert (cap / "manifest.json").read_text() == manifest


def test_capture_into_a_path_it_cannot_create_is_one_line(harness_cli, tmp_path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    for out in (blocker / "sub", pathlib.Path("/proc/no-such-capture")):
        r = harness_cli("capture", str(out), "--suite", "smoke", timeout=120)
        assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr[-1500:]
        assert f"capture folder {out}" in r.stderr.strip().splitlines()[-1], r.stderr
    assert blocker.read_text() == "x" and not os.path.exists("/proc/no-such-capture")


def test_the_stamp_keeps_a_hostile_results_path_inside_its_code_span(tmp_path) -> None:
    """Issue 55: `report --stamp` names the command line, with the results paths, in a code
    span: a path with backticks, HTML and a newline stays text (no raw HTML, no heading)."""
    from fixtures.output_family import markdown_breaches

    from harness.report.stamp import stamp_text

    hostile = "st`<img src=x onerror=alert(1)>`\n# injected.jsonl"
    (tmp_path / hostile).write_text("")
    text = stamp_text([str(tmp_path / hostile)], ["report", str(tmp_path / hostile), "--stamp"])
    own, rest = text.split("\n", 1)      # the first line is the harness's own HTML comment
    assert own.startswith("<!-- Generated") and markdown_breaches(rest) == [], text
    assert "<img src=x onerror=alert(1)>" in text       # shown, as text
