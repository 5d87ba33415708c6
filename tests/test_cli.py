"""The harness command end to end, in real child processes."""
import json
import os
import pathlib

import pytest

from conftest import read_jsonl
from harness.results.schema import schema_errors


def test_list_shows_sources_and_broken_plugins(harness_cli) -> None:
    r = harness_cli("list")
    assert r.returncode == 0, r.stderr
    out = r.stdout
    assert "probe" in out and "harness-testplugin:probes" in out
    assert "smoke" in out and "all" in out
    assert "broken_import" in out and "no_such_module_for_harness_tests" in out
    assert "duplicate workload name 'probe'" in out
    assert "must return a list" in out


def test_info_json_has_fingerprint_and_backends(harness_cli) -> None:
    r = harness_cli("info", "--json")
    assert r.returncode == 0, r.stderr
    info = json.loads(r.stdout)
    assert info["hardware"]["cpu"]["logical_cpus"] >= 1
    assert info["hardware"]["cpu"]["caches"], "sysfs caches missing"
    assert {b["name"] for b in info["backends"]} >= {"test_honest", "test_missing"}
    missing = next(b for b in info["backends"] if b["name"] == "test_missing")
    assert missing["available"] == "no" and "TEST_MISSING_DIR" in missing["reason"]
    assert "OPENBLAS_CORETYPE" in info["environment"] or "OPENBLAS_CORETYPE" not in os.environ
    assert harness_cli("info").returncode == 0


@pytest.mark.mpi
def test_run_records_protocol_one_and_two_ranks(harness_cli, tmp_path) -> None:
    out = tmp_path / "res"
    r = harness_cli("run", "--workload", "probe", "--ranks", "1,2", "--repeats", "3", "--out", str(out))
    assert r.returncode == 0, r.stdout + r.stderr
    records = read_jsonl(out / "results.jsonl")
    assert [rec["launch"]["ranks"] for rec in records] == [1, 2]
    for rec in records:
        assert schema_errors(rec) == []
        assert rec["status"] == "ok"
        assert len(rec["samples"]) == 3 and rec["stats"]["n"] == 3
        assert {"compute", "data", "comm"} <= set(rec["phases"])
        assert rec["metrics"]["ranks_seen"] == rec["launch"]["ranks"]
        # 1 warmup + 3 measured repeats ran; the metrics are the last repeat's
        assert rec["metrics"]["runs"] == 4 and rec["metric_samples"]["runs"] == [2, 3, 4]
        verdicts = [c["passed"] for c in rec["claims"]]
        assert verdicts == [True, False, None]
        assert rec["environment"]["OMP_NUM_THREADS"] == str(rec["launch"]["threads"])
        assert rec["resources"]["peak_rss_bytes"]["max"] > 1e6
        assert len(rec["system_load"]["before"]) == 3
    two = records[1]
    assert two["launch"]["launcher"] == "mpiexec" and two["launch"]["command"][1:3] == ["-n", "2"]
    assert two["launch"]["threads"] == 1
    ops = two["comm"]["ops"]
    assert set(ops) >= {"Allreduce", "Bcast", "allreduce", "Barrier"}
    allreduce = ops["Allreduce"]
    assert [p["rank"] for p in allreduce["per_rank"]] == [0, 1]
    assert all(p["calls"] == 3 and p["bytes"] == 3 * 8 for p in allreduce["per_rank"])
    assert allreduce["calls"] == 6 and allreduce["bytes"] == 48
    assert allreduce["seconds_max"] >= allreduce["seconds_mean"] > 0
    assert two["comm"]["total"]["fraction_max"] > 0
    assert len(two["phases"]["compute"]["per_rank_s"]) == 2
    # one rank still has a real communicator
    assert records[0]["comm"]["ranks"] == 1


def test_show_prints_a_table(harness_cli, tmp_path) -> None:
    out = tmp_path / "res"
    run = harness_cli("run", "--workload", "probe", "--out", str(out), "--repeats", "3")
    assert run.returncode == 0
    assert "claims: 1 pass, 1 fail, 1 not evaluated" in run.stdout   # by status, never "1/3"
    r = harness_cli("show", str(out))
    assert r.returncode == 0, r.stderr
    assert "probe" in r.stdout and "ok" in r.stdout and "1 pass" in r.stdout
    from harness.commands.show import COLUMNS, row
    from harness.results.store import load_records
    (record,), _ = load_records([out])
    assert row(record)[COLUMNS.index("claims")] == "1 pass, 1 fail, 1 not evaluated"


@pytest.mark.parametrize("args, message", [
    (["run", "--workload", "prob"], "did you mean 'probe'"),
    (["run", "--suite", "smok"], "did you mean 'smoke'"),
    (["run", "--workload", "probe", "--backend", "test_honset"], "did you mean 'test_honest'"),
    (["run", "--workload", "probe", "--param", "n=many"], "n='many': expected int"),
    (["run", "--workload", "probe", "--param", "n=0"], "below the minimum"),
    (["run", "--workload", "probe", "--param", "mode=loud"], "not one of plain, stop"),
    (["run", "--workload", "probe", "--param", "colour=red"], "no selected workload has such a param"),
    (["run", "--workload", "probe", "--ranks", "two"], "--ranks 'two'"),
    (["run", "--workload", "probe", "--repeats", "0"], "--repeats 0"),
    (["run"], "one of the arguments --suite --workload is required"),
    (["show", "/no/such/results.jsonl"], "no such results file"),
    (["frobnicate"], "invalid choice"),
])
def test_bad_input_one_line_exit_2(harness_cli, args, message) -> None:
    r = harness_cli(*args)
    assert r.returncode == 2, r.stdout + r.stderr
    errors = [ln for ln in r.stderr.splitlines() if ln.startswith("harness: error:")]
    assert len(errors) == 1 and message in errors[0], r.stderr


def test_malformed_suite_file_exit_2(harness_cli, tmp_path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text("[[case]\nworkload = 'probe'\n")
    r = harness_cli("run", "--suite", str(bad), "--out", str(tmp_path / "o"))
    assert r.returncode == 2 and "malformed TOML" in r.stderr and str(bad) in r.stderr


def test_unwritable_out_exit_2_and_existing_results_kept(harness_cli, tmp_path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("keep me")
    r = harness_cli("run", "--workload", "probe", "--out", str(blocker / "sub"))
    assert r.returncode == 2 and "--out" in r.stderr
    assert blocker.read_text() == "keep me"


def test_every_case_skipped_is_exit_2_with_reason(harness_cli, tmp_path) -> None:
    r = harness_cli("run", "--workload", "probe", "--backend", "test_missing", "--out", str(tmp_path))
    assert r.returncode == 2
    assert "nothing ran" in r.stderr and "TEST_MISSING_DIR" in r.stderr
    rec = read_jsonl(tmp_path / "results.jsonl")[0]
    assert rec["status"] == "skipped" and "TEST_MISSING_DIR" in rec["reason"]


def test_backend_that_does_not_verify_fails_the_case(harness_cli, tmp_path) -> None:
    r = harness_cli("run", "--workload", "probe", "--backend", "test_liar,", "--out", str(tmp_path))
    assert r.returncode == 2  # a malformed backend name
    r = harness_cli("run", "--workload", "probe", "--backend", "test_liar", "--out", str(tmp_path))
    assert r.returncode == 1
    rec = read_jsonl(tmp_path / "results.jsonl")[-1]
    assert rec["status"] == "failed" and "reference-lib is loaded" in rec["reason"]
    assert rec["backend"]["verified"] is False and rec["backend"]["evidence"] == {"loaded": "reference-lib"}
    r = harness_cli("run", "--workload", "probe", "--backend", "test_honest", "--out", str(tmp_path))
    assert r.returncode == 0
    rec = read_jsonl(tmp_path / "results.jsonl")[-1]
    assert rec["backend"]["verified"] is True and rec["backend"]["library"] == "honest-lib 1.0"
    assert rec["backend"]["environment"]["TEST_BACKEND"] == "honest"


@pytest.mark.mpi
def test_dry_run_prints_the_command_the_real_run_records(harness_cli, tmp_path) -> None:
    import shlex

    args = ("run", "--workload", "probe", "--ranks", "2", "--repeats", "1", "--out", str(tmp_path))
    dry = harness_cli(*args, "--dry-run")
    assert dry.returncode == 0
    line = next(ln for ln in dry.stdout.splitlines() if "harness.worker" in ln).split()
    dry_argv = shlex.split(" ".join(w for w in line if "=" not in w or w.startswith("-")))
    assert harness_cli(*args).returncode == 0
    (rec,) = read_jsonl(tmp_path / "results.jsonl")
    real = rec["launch"]["command"]
    assert dry_argv[:-1] == real[:-1] and dry_argv[-1] == "SPEC.json" and real[-1].endswith("spec.json")


def test_oversubscribed_case_is_skipped_or_run_marked_without_claims(harness_cli, tmp_path) -> None:
    """ranks x threads above the usable CPUs: skipped with the reason and the flag to use; with
    --oversubscribe it runs, the record says so, and its claims are not evaluated."""
    too_many = str(len(os.sched_getaffinity(0)) + 1)
    r = harness_cli("run", "--workload", "probe", "--ranks", "1", "--threads", too_many, "--repeats", "3",
                    "--out", str(tmp_path / "a"))
    assert r.returncode == 2 and "oversubscribed" in r.stderr and "--oversubscribe" in r.stderr
    [skipped] = read_jsonl(tmp_path / "a" / "results.jsonl")
    assert skipped["status"] == "skipped" and "oversubscribed: 1 rank(s) x" in skipped["reason"]

    r = harness_cli("run", "--workload", "probe", "--ranks", "1", "--threads", f"1,{too_many}", "--repeats", "3",
                    "--oversubscribe", "--out", str(tmp_path / "b"))
    assert r.returncode == 0, r.stdout + r.stderr
    assert "paper claims" in r.stdout                     # the run ends with its claim tables
    fits, crowded = read_jsonl(tmp_path / "b" / "results.jsonl")
    assert fits["launch"]["oversubscribed"] == "" and crowded["status"] == "ok"
    assert f"need {too_many} CPUs" in crowded["launch"]["oversubscribed"]
    assert {c["status"] for c in fits["claims"]} >= {"pass", "fail"}
    assert {c["status"] for c in crowded["claims"]} <= {"not_evaluated", "not_applicable"}
    assert all(c["measured"] is None for c in crowded["claims"])
    assert schema_errors(crowded) == []


@pytest.mark.parametrize("verb", ["show", "report"])
def test_a_listing_into_a_closed_pipe_ends_quietly(harness_cli, tmp_path, verb) -> None:
    """`harness show big.jsonl | head -3`: the reader leaves early; the harness exits 0 or 141
    (SIGPIPE's status) and prints nothing about the pipe (cli.main's BrokenPipeError branch)."""
    import subprocess
    import sys

    src = next((pathlib.Path(__file__).parent.parent / "gallery" / "intel-xeon-amx-2c").rglob("results.jsonl"))
    lines = [json.loads(line) for line in src.read_text().splitlines() if line.strip()]
    big = tmp_path / "big.jsonl"
    with big.open("w") as f:
        for i in range(400 // len(lines) + 1):   # well past a pipe buffer (64 KiB) of output
            for rec in lines:
                f.write(json.dumps(dict(rec, id=f"{rec['id']}-{i}")) + "\n")
    cmd = f"{sys.executable} -m harness {verb} {big} | head -3 >/dev/null; exit ${{PIPESTATUS[0]}}"
    r = subprocess.run(["bash", "-c", cmd], env=harness_cli.env(), capture_output=True, text=True, timeout=300)
    assert r.returncode in (0, 141), r.stderr
    assert r.stderr == "", r.stderr
