"""Bad values are refused where they enter, with the input named and exit status 2; what cannot
be stored is stored as null with a note; a full disk loses nothing already written."""
from __future__ import annotations

import json
import pathlib
import resource
import subprocess
import sys

import pytest

from conftest import read_jsonl


def _last_line(r: subprocess.CompletedProcess[str]) -> str:
    return r.stderr.strip().splitlines()[-1] if r.stderr.strip() else ""


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "1e309", "0", "-1", "1e-9"])
def test_a_non_finite_or_tiny_timeout_is_refused(harness_cli, tmp_path, value) -> None:
    r = harness_cli("run", "--workload", "fault_slow", f"--timeout={value}", "--out", str(tmp_path))
    assert r.returncode == 2 and "--timeout" in _last_line(r) and "Traceback" not in r.stderr, r.stderr


def test_a_non_finite_param_is_refused_naming_it(harness_cli, tmp_path) -> None:
    r = harness_cli("run", "--workload", "cnn_scaling", "--size", "smoke", "--param", "latency_us=0,nan,1",
                    "--out", str(tmp_path))
    assert r.returncode == 2 and "latency_us=nan" in r.stderr and "finite" in r.stderr, r.stderr
    assert not (tmp_path / "results.jsonl").exists()   # refused before anything was created


def test_huge_counts_and_repeated_sweep_values_are_refused(harness_cli, tmp_path) -> None:
    for args in (["--ranks", "100000000"], ["--threads", "99999"], ["--repeats", "10000000"],
                 ["--param", "seconds=0.1,0.1"], ["--out", ""]):
        r = harness_cli("run", "--workload", "fault_slow", *args, "--out" if args[0] != "--out" else "--size",
                        str(tmp_path) if args[0] != "--out" else "smoke")
        assert r.returncode == 2 and "Traceback" not in r.stderr, (args, r.stderr)


def test_non_finite_metrics_are_stored_as_null_with_a_note(harness_cli, tmp_path) -> None:
    r = harness_cli("run", "--workload", "fault_nan,fault_slow", "--repeats", "1", "--warmup", "0",
                    "--out", str(tmp_path))
    assert r.returncode == 0, r.stderr
    nan, slow = read_jsonl(tmp_path / "results.jsonl")      # both records: none lost
    assert nan["status"] == "ok" and slow["status"] == "ok"
    assert nan["metrics"]["loss"] is None and nan["metrics"]["rate"] is None and nan["metrics"]["fine"] == 2.0
    assert nan["metrics"]["curve"] == [1.0, None]
    assert "non-finite values stored as null" in nan["reason"] and "metrics.loss" in nan["reason"]
    show = harness_cli("show", str(tmp_path))
    assert show.returncode == 0 and "Traceback" not in show.stderr, show.stderr


SUITES = {
    "workload = 5": "workload",
    'workload = ["fault_slow", 7]': "workload",
    'workload = "fault_slow"\nbackend = 5': "backend",
    'workload = "fault_slow"\nsize = ["smoke"]': "size",
    'workload = "fault_slow"\ntimeout = "abc"': "timeout",
    'workload = "fault_slow"\ntimeout = nan': "timeout",
    'workload = "fault_slow"\ntimeout = -1': "timeout",
    'workload = "fault_slow"\nranks = 0': "ranks",
    'workload = "fault_slow"\nrepeats = 1.5': "repeats",
    'workload = "fault_slow"\n[case.params]\nseconds = inf': "seconds",
    'workload = "fault_slow"\nparams = 3': "params",
}


@pytest.mark.parametrize("body", list(SUITES), ids=list(range(len(SUITES))))
def test_suite_values_are_validated_with_file_and_key_named(harness_cli, tmp_path, body) -> None:
    suite = tmp_path / "bad.toml"
    suite.write_text(f'description = "x"\n[[case]]\n{body}\n')
    r = harness_cli("run", "--suite", str(suite), "--out", str(tmp_path / "out"))
    line = _last_line(r)
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    assert str(suite) in line and SUITES[body] in line, line


def test_a_suite_that_is_not_utf8_is_refused(harness_cli, tmp_path) -> None:
    suite = tmp_path / "latin1.toml"
    suite.write_bytes(b'description = "caf\xe9"\n[[case]]\nworkload = "fault_slow"\n')
    r = harness_cli("run", "--suite", str(suite), "--out", str(tmp_path / "out"))
    assert r.returncode == 2 and "not UTF-8" in _last_line(r) and str(suite) in _last_line(r), r.stderr


def _limited(limit: int):
    def apply() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    return apply


def test_a_full_disk_during_an_append_leaves_the_file_as_it_was(harness_cli, tmp_path) -> None:
    out = tmp_path / "out"
    first = harness_cli("run", "--workload", "fault_slow", "--repeats", "1", "--warmup", "0", "--out", str(out))
    assert first.returncode == 0, first.stderr
    results = out / "results.jsonl"
    before = results.read_bytes()
    proc = subprocess.run([sys.executable, "-m", "harness", "run", "--workload", "fault_slow", "--param", "tag=1",
                           "--repeats", "1", "--warmup", "0", "--out", str(out)], env=harness_cli.env(),
                          capture_output=True, text=True, timeout=120, preexec_fn=_limited(len(before) + 200))
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr and "the file is as it was before" in _last_line(proc)
    assert results.read_bytes() == before


def test_a_full_disk_for_the_case_files_is_a_one_line_error(harness_cli, tmp_path) -> None:
    proc = subprocess.run([sys.executable, "-m", "harness", "run", "--workload", "fault_slow", "--out",
                           str(tmp_path / "out")], env=harness_cli.env(), capture_output=True, text=True,
                          timeout=120, preexec_fn=_limited(64))
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert "cannot write the case's work files" in _last_line(proc) or "--out" in _last_line(proc)


def test_an_unwritable_out_is_a_one_line_error(harness_cli, tmp_path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    r = harness_cli("run", "--workload", "fault_slow", "--out", str(blocker / "sub"))
    assert r.returncode == 2 and "--out" in _last_line(r) and "Traceback" not in r.stderr, r.stderr
    assert "choose a writable folder" in _last_line(r)


def _hostile_results(folder: pathlib.Path) -> pathlib.Path:
    """Records holding markup, mathtext, HTML and formulas in their strings, NaN samples, and
    lines that are not records at all (deep nesting, a 5000-digit number, garbage)."""
    from conftest import make_record

    folder.mkdir(parents=True, exist_ok=True)
    strings = ["/data/[/]x[bold]y", "$\\foo{$", "<script>alert(1)</script>", "=HYPERLINK(\"http://x\")", "25:50:100"]
    lines = []
    for i, text in enumerate(strings):
        rec = make_record(case_id=f"w[smoke]{{{i}}}", params={"dataset": text}, swept={"dataset": text}, reason=text)
        lines.append(json.dumps(rec.to_json()))
    nan = make_record(case_id="w[smoke]{nan}", samples=[float("nan"), 1.0, float("nan")])
    lines.append(json.dumps(nan.to_json()))          # Python's json writes NaN; readers must cope
    lines += ["[" * 100000, "9" * 5000, '{"schema_version": 2, "x": ' + "1" * 5000 + "}"]
    lines += [f"garbage {i}" for i in range(200)]
    path = folder / "results.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_readers_treat_record_strings_as_text_and_survive_any_line(harness_cli, tmp_path) -> None:
    _hostile_results(tmp_path / "h")
    show = harness_cli("show", str(tmp_path / "h"), env={"COLUMNS": "400"})   # wide: no cell wraps
    assert show.returncode == 0 and "Traceback" not in show.stderr, show.stderr
    assert "/data/[/]x[bold]y" in show.stdout                    # printed as written, not eaten as markup
    warnings = [ln for ln in show.stderr.splitlines() if ln.startswith("warning:")]
    assert len(warnings) == 6 and "more unreadable line(s)" in warnings[-1]   # 203 bad lines, 6 warnings
    for fmt in ("md", "html", "csv"):
        out = tmp_path / f"report.{fmt}"
        r = harness_cli("report", str(tmp_path / "h"), "--out", str(out))
        assert r.returncode == 0 and "Traceback" not in r.stderr, (fmt, r.stderr)
        text = out.read_text()
        if fmt in ("md", "html"):
            assert "<script>" not in text, fmt                    # escaped: rendered as text
        else:
            assert ",=HYPERLINK" not in text and "'=HYPERLINK" in text
    listing = harness_cli("list", "workloads")
    assert listing.returncode == 0 and "💯" not in listing.stdout


def test_compare_with_no_ok_record_on_one_side_is_exit_2(harness_cli, tmp_path) -> None:
    from conftest import make_record

    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    (tmp_path / "a" / "results.jsonl").write_text(json.dumps(make_record(status="failed", reason="x").to_json()) + "\n")
    (tmp_path / "b" / "results.jsonl").write_text(json.dumps(make_record().to_json()) + "\n")
    r = harness_cli("compare", str(tmp_path / "a"), str(tmp_path / "b"))
    assert r.returncode == 2 and "no ok record in" in r.stderr and "Traceback" not in r.stderr, r.stderr


def test_nesting_is_bounded_at_64_levels_of_lists_and_objects() -> None:
    from harness.results.store import parse_line

    assert "nested deeper" not in parse_line("[" * 64 + "]" * 64)[1]      # deep enough, just not a record
    assert "nested deeper than 64" in parse_line("[" * 63 + "[1, {}]" + "]" * 63)[1]
    assert "nested deeper than 64" in parse_line("[" * 100000)[1]         # beyond the parser's own limit


def test_non_utf8_out_or_machine_name_is_refused_before_anything_runs(harness_cli, tmp_path) -> None:
    """Issue 55: a byte that is not UTF-8 in --out or --machine-name cannot be stored in a record:
    refused up front (exit 2, naming the option), never a run that says ok and stores 'failed'."""
    bad_out = str(tmp_path) + "/o" + b"\xff".decode("utf-8", "surrogateescape")
    r = harness_cli("run", "--workload", "roofline", "--size", "smoke", "--out", bad_out)
    assert r.returncode == 2 and "--out" in r.stderr and "not UTF-8" in r.stderr, r.stderr
    r = harness_cli("run", "--workload", "roofline", "--size", "smoke", "--out", str(tmp_path / "ok"),
                    "--machine-name", "n" + b"\xfe".decode("utf-8", "surrogateescape"))
    assert r.returncode == 2 and "--machine-name" in r.stderr and "not UTF-8" in r.stderr, r.stderr
    assert not list(tmp_path.iterdir())       # nothing written
