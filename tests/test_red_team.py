"""The red-team campaign's defects (issue 24), each reproduced: hostile plugins, hostile metric
values and odd files where results belong. Each test failed on the code before the fix.

Hostile plugins are written on the fly as modules with a hand-made ``*.dist-info`` (its
``entry_points.txt`` names them in the ``harness.plugins`` group) in a folder put on PYTHONPATH,
next to the test plugins, whose ``fault_slow`` workload is the well-behaved case that must keep
running."""
from __future__ import annotations

import json
import os
import pathlib
import signal
import subprocess
import sys
import time

import pytest

from conftest import read_jsonl
from fixtures.hostile_plugins import MALFORMED, SLOW_CONTROL, VALUES




QUICK = ("--workload", "fault_slow", "--param", "seconds=0.01", "--repeats", "1", "--warmup", "0")


def _records(out: pathlib.Path) -> list[dict]:
    return read_jsonl(out / "results.jsonl") if (out / "results.jsonl").exists() else []


# 1. SystemExit and KeyboardInterrupt from plugin code ---------------------------------------------

@pytest.mark.parametrize("raised", ["SystemExit(0)", "SystemExit(3)", "KeyboardInterrupt()", "GeneratorExit()"])
def test_a_plugin_that_exits_at_import_costs_only_itself(hostile, tmp_path, raised) -> None:
    add, run = hostile
    add("exits_at_import", f"raise {raised}\n")
    r = run("run", *QUICK, "--out", str(tmp_path / "out"))
    assert r.returncode == 0, r.stdout + r.stderr
    assert [x["status"] for x in _records(tmp_path / "out")] == ["ok"]
    assert "exits_at_import" in r.stderr and raised.split("(")[0] in r.stderr
    listing = run("list")
    assert listing.returncode == 0 and "exits_at_import" in listing.stdout + listing.stderr


def test_a_hook_that_raises_systemexit_does_not_end_the_sweep(hostile, tmp_path) -> None:
    add, run = hostile
    add("exits_in_hook", """
        @hookimpl
        def harness_case_finished(record):
            raise SystemExit(0)
        """)
    r = run("run", "--workload", "fault_slow", "--param", "seconds=0.01,0.02,0.03", "--repeats", "1",
            "--warmup", "0", "--out", str(tmp_path / "out"))
    assert r.returncode == 0, r.stderr
    assert [x["status"] for x in _records(tmp_path / "out")] == ["ok"] * 3
    assert r.stderr.count("harness_case_finished raised SystemExit") == 3


# 2. Malformed third-party workloads ----------------------------------------------------------------


def test_malformed_workloads_are_listed_as_broken_and_the_rest_run(hostile, tmp_path) -> None:
    add, run = hostile
    add("malformed", MALFORMED)
    listing = run("list")
    assert listing.returncode == 0, listing.stderr
    text = " ".join((listing.stdout + listing.stderr).split())
    assert "Traceback" not in text
    for why in ("'no_sizes': sizes must map", "'no_claims': claims must be a list", "'no_params': params must map",
                "reading it raised SystemExit('name')", "'bare_param': params must map",
                "'no_frameworks': frameworks must be", "'letter_requires': requires must be",
                "the default of param 'n' is not a valid value", "'no_smoke' has no 'smoke' size"):
        assert why in text, why
    r = run("run", *QUICK, "--out", str(tmp_path / "out"))
    assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr
    smoke = run("run", "--suite", "smoke", "--workload", "fault_slow", "--dry-run")
    assert smoke.returncode in (0, 2) and "Traceback" not in smoke.stderr


# 3 and 13. Hostile metric values ------------------------------------------------------------------

def _values(hostile, tmp_path: pathlib.Path, kind: str) -> subprocess.CompletedProcess[str]:
    """One case of the hostile-values workload, returning ``kind`` of value."""
    add, run = hostile
    add("values_plugin", VALUES)
    return run("run", "--workload", "values", "--param", f"kind={kind}", "--repeats", "1", "--warmup", "0",
               "--out", str(tmp_path / "out"))


@pytest.mark.parametrize("kind,says", [
    ("big", "an integer of 401 digits, too large for a float"),
    ("string", "is a str ('fast'), not a finite number"),
    ("bool", "is a bool ('True')"),
    ("list", "is a list ('[1, 2]')"),
])
def test_a_claim_metric_that_is_no_number_says_what_it_was(hostile, tmp_path, kind, says) -> None:
    r = _values(hostile, tmp_path, kind)
    assert r.returncode == 0, r.stdout + r.stderr
    (rec,) = _records(tmp_path / "out")
    (claim,) = rec["claims"]
    assert claim["status"] == "not_evaluated" and says in claim["reason"], claim["reason"]


@pytest.mark.parametrize("kind,says", [
    ("keys", "metric names must be strings"),
    ("surrogate", "bad \\udc80 byte"),
])
def test_bad_keys_and_unencodable_messages_fail_the_case_with_the_reason(hostile, tmp_path, kind, says) -> None:
    r = _values(hostile, tmp_path, kind)
    assert r.returncode == 1 and "Traceback" not in r.stderr.split("\n")[-2:], r.stderr
    (rec,) = _records(tmp_path / "out")
    # the worker wrote its error and the parent read it (not "worker crashed" from a failed writer)
    assert rec["status"] == "failed" and rec["reason"].startswith("rank 0 raised"), rec["reason"]
    assert says in rec["reason"] + rec.get("stderr_tail", ""), rec["reason"]


def test_huge_values_are_bounded_so_every_reader_can_read_the_record(hostile, tmp_path) -> None:
    add, run = hostile
    add("values_plugin", VALUES)
    out = tmp_path / "out"
    for kind in ("huge_metric", "huge_reason"):
        run("run", "--workload", "values", "--param", f"kind={kind}", "--repeats", "1", "--warmup", "0",
            "--out", str(out), timeout=300)
    size = (out / "results.jsonl").stat().st_size
    assert size < 4 * 2 ** 20, size
    metric, reason = _records(out)
    assert metric["status"] == "ok" and "values over 1024 KiB cut: metrics.blob" in metric["reason"]
    assert reason["status"] == "failed" and len(reason["reason"]) < 40_000
    shown = run("show", str(out))
    assert shown.returncode == 0 and "2 record(s)" in shown.stdout and "skipped" not in shown.stderr
    resumed = run("run", "--workload", "values", "--param", "kind=huge_metric", "--repeats", "1", "--warmup", "0",
                  "--out", str(out), "--resume", timeout=300)
    assert "1 of 1 cases already ok" in resumed.stdout and len(_records(out)) == 2


# 4. Signals in `harness controls` ------------------------------------------------------------------


@pytest.mark.parametrize("sig,code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_controls_stopped_by_a_signal_record_the_case_and_say_so(hostile, harness_cli, tmp_path, sig, code) -> None:
    add, _ = hostile
    add("slow_control_plugin", SLOW_CONTROL)
    out = tmp_path / "controls"
    env = harness_cli.env({"PYTHONPATH": f"{tmp_path / 'site'}{os.pathsep}{harness_cli.env()['PYTHONPATH']}"})
    from conftest import default_sigint
    proc = subprocess.Popen([sys.executable, "-m", "harness", "controls", "--workload", "slow_control",
                             "--out", str(out)], env=env, text=True, preexec_fn=default_sigint,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.time() + 60
    while time.time() < deadline and not (out / "results.jsonl").exists():   # made before the first case
        time.sleep(0.2)
    time.sleep(3)
    proc.send_signal(sig)
    stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == code, stdout + stderr
    assert "Traceback" not in stderr and f"interrupted by {signal.Signals(sig).name}" in stderr
    (rec,) = _records(out)
    assert rec["status"] == "failed" and "interrupted by" in rec["reason"], rec["reason"]
    # the interrupted case's work files stay for debugging, as a failed case's do, until the next run


# 7, 8, 9. Odd files where results belong -------------------------------------------------------

def test_a_fifo_at_the_results_file_is_refused_not_waited_on(hostile, tmp_path) -> None:
    _, run = hostile
    out = tmp_path / "out"
    out.mkdir()
    os.mkfifo(out / "results.jsonl")
    r = run("run", *QUICK, "--out", str(out), timeout=60)
    assert r.returncode == 2 and "is a FIFO" in r.stderr and "results.jsonl" in r.stderr, r.stderr
    folder = tmp_path / "folder"
    folder.mkdir()
    (folder / "good.jsonl").write_text("")
    os.mkfifo(folder / "pipe.jsonl")
    for verb in ("show", "report"):
        r = run(verb, str(folder), timeout=60)
        assert r.returncode == 2 and "pipe.jsonl: is a FIFO" in r.stderr, r.stderr


@pytest.mark.parametrize("device", ["/dev/full", "/dev/null"])
def test_a_results_file_linked_to_a_device_is_refused(hostile, tmp_path, device) -> None:
    _, run = hostile
    out = tmp_path / "out"
    out.mkdir()
    (out / "results.jsonl").symlink_to(device)
    r = run("run", *QUICK, "--out", str(out), timeout=60)
    assert r.returncode == 2 and "is a device" in r.stderr and device in r.stderr, r.stderr
    assert "Traceback" not in r.stderr


def test_a_folder_named_like_a_results_file_is_refused_by_every_reader(hostile, tmp_path) -> None:
    add, run = hostile
    out = tmp_path / "out"
    assert run("run", *QUICK, "--out", str(out)).returncode == 0
    (out / "odd.jsonl").mkdir()
    for args in (("show", str(out)), ("report", str(out)), ("compare", str(out), str(out))):
        r = run(*args)
        assert r.returncode == 2 and "odd.jsonl: is a folder" in r.stderr and "Traceback" not in r.stderr, r.stderr


# 10. Parquet export of what the harness recorded ------------------------------------------------------

def test_parquet_export_of_an_integer_beyond_int64(hostile, tmp_path) -> None:
    pytest.importorskip("pyarrow")
    add, run = hostile
    add("values_plugin", VALUES.replace('"big": 10 ** 400', '"big": 2 ** 70'))
    out = tmp_path / "out"
    run("run", "--workload", "values", "--param", "kind=big", "--repeats", "1", "--warmup", "0", "--out", str(out))
    r = run("report", str(out), "--out", str(tmp_path / "r.parquet"))
    assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr
    import pandas as pd
    frame = pd.read_parquet(tmp_path / "r.parquet")
    assert str(2 ** 70) in str(frame["metric.speed"].iloc[0])


# 11. Plans that would not end ----------------------------------------------------------------------

def test_a_sweep_beyond_the_case_limit_is_refused_with_the_count(hostile, tmp_path) -> None:
    _, run = hostile
    values = ",".join(f"{0.001 * (i + 1):.3f}" for i in range(200))
    threads = ",".join(str(i + 1) for i in range(60))
    t = time.perf_counter()
    r = run("run", "--workload", "fault_slow", "--param", f"seconds={values}", "--threads", threads, "--dry-run")
    assert r.returncode == 2 and "12,000 case(s)" in r.stderr and "HARNESS_MAX_CASES" in r.stderr, r.stderr
    assert time.perf_counter() - t < 30


# 12. Imports that hang or flood ----------------------------------------------------------------------

def test_an_import_that_hangs_or_floods_costs_only_its_plugin(hostile, tmp_path) -> None:
    add, run = hostile
    add("sleeps_at_import", "import time\ntime.sleep(600)\n")
    add("floods_at_import", "print('x' * (50 * 2 ** 20))\n")
    t = time.perf_counter()
    r = run("list", env={"HARNESS_PLUGIN_IMPORT_TIMEOUT": "2"}, timeout=120)
    assert r.returncode == 0, r.stderr
    assert time.perf_counter() - t < 60
    assert len(r.stdout) + len(r.stderr) < 2 ** 20
    text = " ".join((r.stdout + r.stderr).split())
    assert "sleeps_at_import" in text and "still importing after 2 s" in text
    assert "fault_slow" in text


def test_the_fast_validator_agrees_with_jsonschema_on_mutated_records() -> None:
    """The readers' compiled schema (fastjsonschema) must accept and refuse what jsonschema does."""
    import copy
    import random

    import jsonschema

    from harness.results.schema import SCHEMA_PATHS, is_valid

    full = jsonschema.Draft202012Validator(json.loads(SCHEMA_PATHS[3].read_text()))   # the fixture's version
    base = read_jsonl(pathlib.Path(__file__).parent / "fixtures" / "records" / "gpu-node" / "results.jsonl")
    rng = random.Random(1)
    junk = [None, "x", -1, 1.5, True, [], {}, [1, "a"], {"a": 1}, 10 ** 30]
    disagreements = []
    for i in range(400):
        rec = copy.deepcopy(base[i % len(base)])
        node, key = rec, None
        for _ in range(rng.randint(1, 3)):       # walk down to a random field, then break it
            if not isinstance(node, dict) or not node:
                break
            key = rng.choice(sorted(node))
            if rng.random() < 0.5 and isinstance(node[key], dict) and node[key]:
                node = node[key]
            else:
                break
        if isinstance(node, dict) and key in node:
            if rng.random() < 0.2:
                del node[key]
            else:
                node[key] = rng.choice(junk)
        if full.is_valid(rec) != is_valid(rec, 3):
            disagreements.append(key)
    assert not disagreements, disagreements
