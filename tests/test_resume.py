"""Killing `harness run` mid-suite leaves a valid JSONL file; --resume runs only what is missing."""
import signal
import time

import pytest

from conftest import read_jsonl
from harness.results.schema import schema_errors


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGKILL])
def test_kill_then_resume(harness_cli, tmp_path, sig) -> None:
    args = ("run", "--workload", "fault_slow", "--param", "tag=1,2,3,4,5,6", "--param", "seconds=0.15",
            "--repeats", "3", "--warmup", "0", "--out", str(tmp_path))
    results = tmp_path / "results.jsonl"
    proc = harness_cli.popen(*args)
    deadline = time.time() + 60
    while time.time() < deadline:
        if results.exists() and len(read_jsonl(results)) >= 2:
            break
        time.sleep(0.05)
    proc.send_signal(sig)
    proc.communicate(timeout=30)
    before = read_jsonl(results)  # every line parses: nothing torn
    assert 2 <= len(before) < 6
    assert all(schema_errors(r) == [] for r in before)
    ok_before = [r for r in before if r["status"] == "ok"]
    interrupted = [r for r in before if r["status"] != "ok"]   # SIGINT records the running case so
    assert all(r["reason"].startswith("interrupted by SIGINT") for r in interrupted)
    assert len(interrupted) <= (1 if sig == signal.SIGINT else 0)
    tags_before = [r["params"]["tag"] for r in ok_before]

    r = harness_cli(*args, "--resume")
    assert r.returncode == 0, r.stdout + r.stderr
    assert f"{len(ok_before)} of 6 cases already ok" in r.stdout
    after = read_jsonl(results)
    new = after[len(before):]
    assert sorted(tags_before + [x["params"]["tag"] for x in new]) == [1, 2, 3, 4, 5, 6]
    assert all(r["status"] == "ok" for r in new)
