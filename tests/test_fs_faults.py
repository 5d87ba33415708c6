"""Faults of the file system and odd inputs (issue 44): unreadable entries of a results folder are
skipped, not fatal; every output write on a full or read-only disk is one line naming the path
(exit 2, or 1 for a run whose records are safe), never a partial file; history at any series
length and value; environment variables and asv configurations checked. Each failed before the fix."""
from __future__ import annotations

import gzip
import json
import math
import os
import pathlib
import resource
import shutil
import subprocess
import sys
import time

import pytest

from conftest import ROOT, make_record, signal_when
from fixtures.output_family import write_results
from harness.results.store import record_line


def _last(r: subprocess.CompletedProcess[str]) -> str:
    return (r.stderr.strip().splitlines() or [""])[-1]


def _no_traceback(r: subprocess.CompletedProcess[str]) -> None:
    assert "Traceback" not in r.stdout + r.stderr, r.stderr[-2000:]


def test_unreadable_entries_of_a_results_folder_are_skipped_with_a_warning(harness_cli, tmp_path) -> None:
    folder = tmp_path / "res"
    write_results(folder, ["plain"], "a")
    good = (folder / "results.jsonl").read_bytes()
    (folder / "dangling.jsonl").symlink_to(tmp_path / "gone.jsonl")
    (folder / "loop1.jsonl").symlink_to(folder / "loop2.jsonl")
    (folder / "loop2.jsonl").symlink_to(folder / "loop1.jsonl")
    (folder / "zipped.jsonl").write_bytes(gzip.compress(good))
    (folder / "wide.jsonl").write_bytes(good.decode().encode("utf-16"))
    for args in (["show", str(folder)], ["report", str(folder)], ["history", str(folder)],
                 ["compare", str(folder), str(folder)]):
        r = harness_cli(*args, timeout=300)
        _no_traceback(r)
        assert r.returncode in (0, 1), (args, r.stderr)
        said = r.stderr.replace("\n", " ")
        for what in ("dangling.jsonl: a dangling link", "loop1.jsonl: a link loop", "zipped.jsonl: gzip-compressed",
                     "wide.jsonl: UTF-16 text"):
            assert what in said or "more unreadable" in said, (args, what, r.stderr)
    shown = harness_cli("show", str(folder))
    assert f"{len(good.splitlines())} record(s)" in shown.stdout


def test_a_results_path_that_is_not_utf8_is_read_by_every_reader(harness_cli, tmp_path) -> None:
    odd = pathlib.Path(os.fsdecode(bytes(tmp_path) + b"/caf\xe9-\xff"))
    write_results(odd, ["plain"], "a")
    for args in (["show", str(odd)], ["compare", str(odd), str(odd)], ["history", str(odd)],
                 *(["report", str(odd), "--out", str(tmp_path / f"r.{fmt}")] for fmt in ("md", "html", "csv"))):
        r = harness_cli(*args, timeout=300)
        _no_traceback(r)
        assert r.returncode in (0, 1), (args, r.stderr)


def _fsize_limit(limit: int):
    def apply() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    return apply


def _run_limited(harness_cli, limit: int, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "harness", *args], env=harness_cli.env(), capture_output=True,
                          text=True, timeout=300, preexec_fn=_fsize_limit(limit))


def test_a_full_disk_leaves_outputs_whole_or_as_they_were(harness_cli, tmp_path) -> None:
    folder = tmp_path / "res"
    write_results(folder, ["plain"], "a")
    for fmt in ("md", "html", "csv"):
        out = tmp_path / f"report.{fmt}"
        out.write_text("the previous report")
        r = _run_limited(harness_cli, 2048, "report", str(folder), "--out", str(out))
        _no_traceback(r)
        assert r.returncode == 2 and str(out) in _last(r) and "as it was" in _last(r), r.stderr
        assert out.read_text() == "the previous report"
    plots = tmp_path / "plots"
    shutil.copy(folder / "results.jsonl", tmp_path / "second.jsonl")
    r = _run_limited(harness_cli, 2048, "history", str(folder), "--plot", str(plots))
    _no_traceback(r)
    assert all(p.stat().st_size > 0 for p in plots.glob("*")), "a 0-byte or partial plot"
    assert not [p for p in tmp_path.rglob(".*") if p.is_file()], "a temporary file was left"


@pytest.fixture
def read_only(tmp_path) -> pathlib.Path:
    """A folder no one may write in: a read-only tmpfs for root (whom permissions do not stop),
    mode 0555 for anyone else."""
    folder = tmp_path / "ro"
    folder.mkdir()
    if os.geteuid() == 0:
        r = subprocess.run(["mount", "-t", "tmpfs", "-o", "ro,size=1m", "tmpfs", str(folder)], capture_output=True)
        if r.returncode != 0:
            pytest.skip(f"cannot mount a read-only tmpfs here: {r.stderr.decode().strip()}")
        yield folder
        subprocess.run(["umount", str(folder)], check=False)
    else:
        folder.chmod(0o555)
        yield folder
        folder.chmod(0o755)


def test_a_read_only_disk_is_one_line_naming_the_path_for_every_writer(harness_cli, tmp_path, read_only) -> None:
    folder = tmp_path / "res"
    write_results(folder, ["plain"], "a")
    conf = tmp_path / "asv.conf.json"
    conf.write_text(json.dumps({"version": 1, "project": "x", "repo": str(ROOT),
                                "results_dir": str(read_only / "asv")}))
    probes = {
        "report": ["report", str(folder), "--out", str(read_only / "r.md")],
        "report --by-machine": ["report", str(folder), "--by-machine", "--out", str(read_only / "m.csv")],
        "history --plot": ["history", str(folder), "--plot", str(read_only / "plots")],
        "capture": ["capture", str(read_only / "cap"), "--suite", "smoke"],
        "export-asv": ["export-asv", str(folder), "--config", str(conf)],
        "run --junit": ["run", "--workload", "fault_slow", "--repeats", "1", "--warmup", "0", "--out",
                        str(tmp_path / "out"), "--junit", str(read_only / "j.xml")],
        "run --out": ["run", "--workload", "fault_slow", "--repeats", "1", "--warmup", "0", "--out",
                      str(read_only / "out")],
        "submit": ["submit", "--workload", "fault_slow", "--out", str(read_only / "sub")],
    }
    if shutil.which("sbatch") is None:     # submit stops first at the missing sbatch (exit 2, says so)
        del probes["submit"]
    for name, args in probes.items():
        r = harness_cli(*args, timeout=300)
        _no_traceback(r)
        assert r.returncode == 2, (name, r.returncode, r.stderr[-800:])
        assert str(read_only) in _last(r), (name, r.stderr[-800:])
    assert list(read_only.iterdir()) == []


def test_a_run_whose_junit_cannot_be_written_at_the_end_says_so_and_exits_1(harness_cli, tmp_path) -> None:
    """The JUnit folder was writable when the run began and is not at its end (a full disk): the
    records are safe, the run exits 1 naming the JUnit file."""
    junit = tmp_path / "junit.xml"
    out = tmp_path / "out"
    r = subprocess.run([sys.executable, "-c", (
        "import sys, harness.export.junit as j\n"
        "def full(path, suites):\n"
        "    from harness.output.atomic import write_atomic\n"
        "    write_atomic(path, lambda f: (_ for _ in ()).throw(OSError(28, 'No space left on device')))\n"
        "j.write = full\n"
        "from harness.cli import main\n"
        "sys.exit(main(sys.argv[1:]))"),
        "run", "--workload", "fault_slow", "--repeats", "1", "--warmup", "0", "--out", str(out), "--junit",
        str(junit)], env=harness_cli.env(), capture_output=True, text=True, timeout=300)
    _no_traceback(r)
    assert r.returncode == 1, r.stderr
    said = " ".join(r.stderr.split())
    assert "JUnit file was not written" in said and "No space left on device" in said, r.stderr
    assert not junit.exists() and (out / "results.jsonl").is_file()


@pytest.mark.parametrize("value", ["5", '""', '"res\\u0000ults"'])
def test_export_asv_refuses_a_results_dir_that_is_no_path(harness_cli, tmp_path, value) -> None:
    conf = tmp_path / "asv.conf.json"
    conf.write_text('{"version": 1, "repo": "%s", "results_dir": %s}' % (ROOT, value))
    folder = tmp_path / "res"
    write_results(folder, ["plain"], "a")
    r = harness_cli("export-asv", str(folder), "--config", str(conf))
    _no_traceback(r)
    assert r.returncode == 2 and "results_dir must be a non-empty path string" in _last(r), r.stderr


@pytest.mark.parametrize("name,value", [("HARNESS_MAX_CASES", "abc"), ("HARNESS_MAX_CASES", "0"),
                                        ("HARNESS_MAX_CASES", "-1"), ("HARNESS_PLUGIN_IMPORT_TIMEOUT", "nan"),
                                        ("HARNESS_PLUGIN_IMPORT_TIMEOUT", "-5"),
                                        ("HARNESS_PLUGIN_IMPORT_TIMEOUT", "abc")])
def test_an_unusable_environment_variable_is_warned_about_by_name(harness_cli, tmp_path, name, value) -> None:
    r = harness_cli("run", "--workload", "fault_slow", "--dry-run", env={name: value})
    _no_traceback(r)
    assert r.returncode == 0, r.stderr
    assert f"warning: {name}={value!r} is not" in r.stderr and "using the default" in r.stderr, r.stderr


def test_records_sharing_an_id_are_said_once(harness_cli, tmp_path) -> None:
    folder = tmp_path / "res"
    path = write_results(folder, ["plain"], "a")
    text = path.read_text()
    path.write_text(text * 5)
    r = harness_cli("show", str(folder))
    assert r.returncode == 0, r.stderr
    assert r.stderr.count("repeat the id of an earlier one") == 1, r.stderr
    n = len(text.splitlines())
    assert f"{4 * n} record(s) repeat the id" in r.stderr


def _series(path: pathlib.Path, medians: list[float], interval=None) -> None:
    import datetime as dt

    lines = []
    for i, m in enumerate(medians):
        samples = [m * (1 + 0.001 * k) for k in range(3)]
        rec = make_record(id=f"{i:016x}", run_id=f"r{i}", samples=samples,
                          created=(dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc) + dt.timedelta(hours=i)).isoformat())
        rec.stats.median = samples[1]
        rec.stats.ci95 = interval(m) if interval else [samples[0], samples[2]]
        lines.append(record_line(rec))
    path.write_bytes(b"".join(lines))


def test_history_survives_extreme_values_and_intervals(harness_cli, tmp_path) -> None:
    _series(tmp_path / "huge.jsonl", [1.6e308] * 6)
    _series(tmp_path / "miss.jsonl", [1.0, 1.0, 1.0, 2.0, 2.0, 2.0], interval=lambda m: [10.0, 11.0])
    for name in ("huge", "miss"):
        r = harness_cli("history", str(tmp_path / f"{name}.jsonl"), "--plot", str(tmp_path / f"plots-{name}"))
        _no_traceback(r)
        assert r.returncode in (0, 1), (name, r.stderr)
    r = harness_cli("report", str(tmp_path / "huge.jsonl"), "--out", str(tmp_path / "huge.html"))
    _no_traceback(r)
    assert r.returncode == 0 and (tmp_path / "huge.html").stat().st_size > 0


def test_a_step_interval_wider_than_a_float_saturates_instead_of_raising(monkeypatch) -> None:
    from harness.history import steps
    from harness.history.series import Point

    monkeypatch.setattr(steps, "scan_critical", lambda n, confidence: 1e6)
    runs = [Point(f"r{i}", "", [], samples=[v, v * 1.5]) for i, v in enumerate([1.0, 2.0, 1.0, 2.0])]
    ratio, low, high = steps.step_interval(runs[:2], runs[2:])
    assert math.isfinite(ratio) and low == 0.0 and high == math.inf
    assert steps.classify(ratio, low, high, 0.05) == "unconfirmed"


@pytest.mark.slow
def test_ctrl_c_while_reading_a_large_results_file_is_one_line(harness_cli, tmp_path) -> None:
    """Over 32 MiB the readers are a pool of processes: Ctrl-C must not print a traceback from each."""
    line = record_line(make_record(reason="x" * 4000))
    big = tmp_path / "big.jsonl"
    with open(big, "wb") as f:
        for i in range(40 * 2**20 // len(line) + 1):
            f.write(line.replace(b'"0123456789abcdef"', f'"{i:016x}"'.encode()))
    proc = harness_cli.popen("compare", str(big), str(big))
    t0 = time.monotonic()
    err = signal_when(proc, lambda: time.monotonic() - t0 > 1.5, 2, "compare finished before the signal")
    assert "Traceback" not in err and proc.returncode == 130, err[-2000:]


def test_written_files_are_as_readable_as_the_umask_says(harness_cli, tmp_path) -> None:
    """A report written for a group on a shared cluster must be readable by the group: every
    output goes through write_atomic, whose temporary file (mkstemp: 0600) gets the mode a plain
    open() would have given, like results.jsonl (issue 41)."""
    from harness.output.atomic import write_atomic

    old = os.umask(0o022)   # the CLI inherits it
    try:
        r = harness_cli("run", "--workload", "fault_slow", "--param", "seconds=0.01", "--repeats", "1",
                        "--warmup", "0", "--out", str(tmp_path / "run"), "--junit", str(tmp_path / "junit.xml"))
        assert r.returncode == 0, r.stderr
        rep = harness_cli("report", str(tmp_path / "run"), "--out", str(tmp_path / "report.md"))
        assert rep.returncode == 0, rep.stderr
        os.umask(0o027)
        write_atomic(tmp_path / "group.txt", "x")
    finally:
        os.umask(old)
    for name in ("run/results.jsonl", "junit.xml", "report.md"):
        assert (tmp_path / name).stat().st_mode & 0o777 == 0o644, name
    assert (tmp_path / "group.txt").stat().st_mode & 0o777 == 0o640
