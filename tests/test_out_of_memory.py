"""An OOM kill is reported as running out of memory, not as an anonymous "killed by signal 9":
a real case under a real memory cgroup limit, and the wording rules on the guard's counters."""
from __future__ import annotations

import os
import pathlib
import subprocess
import sys
import uuid

import pytest

from conftest import read_jsonl
from harness.launch.process_guard import oom_counts
from harness.launch.process import ProcessResult


def _own_cgroup(controller_line: str) -> str | None:
    for line in pathlib.Path("/proc/self/cgroup").read_text().splitlines():
        _, controllers, path = line.split(":", 2)
        if controller_line == controllers or controller_line in controllers.split(","):
            return path
    return None


def _limited_cgroup(limit_bytes: int) -> pathlib.Path | None:
    """A fresh memory cgroup below this process's own, limited to ``limit_bytes`` (None: cannot)."""
    name = f"harness-oom-{uuid.uuid4().hex[:8]}"
    v1 = _own_cgroup("memory")
    candidates = []
    if v1 is not None:
        candidates.append((pathlib.Path(f"/sys/fs/cgroup/memory{v1.rstrip('/')}") / name, "memory.limit_in_bytes"))
    v2 = _own_cgroup("")
    if v2 is not None:
        candidates.append((pathlib.Path(f"/sys/fs/cgroup{v2.rstrip('/')}") / name, "memory.max"))
    for folder, limit_file in candidates:
        try:
            folder.mkdir()
        except OSError:
            continue
        try:
            (folder / limit_file).write_text(str(limit_bytes))
            for swap in ("memory.memsw.limit_in_bytes", "memory.swap.max"):
                if (folder / swap).exists():
                    try:
                        (folder / swap).write_text(str(limit_bytes) if swap.endswith("bytes") else "0")
                    except OSError:
                        pass
            return folder
        except OSError:
            folder.rmdir()
    return None


def test_an_oom_killed_case_is_reported_as_out_of_memory(harness_cli, tmp_path) -> None:
    cgroup = _limited_cgroup(700 * 2**20)
    if cgroup is None:
        pytest.skip("cannot create a memory cgroup here (needs root and a writable cgroup memory controller)")
    procs = str(cgroup / "cgroup.procs")

    def enter() -> None:
        with open(procs, "w") as f:
            f.write(str(os.getpid()))

    out = tmp_path / "out"
    try:
        r = subprocess.run([sys.executable, "-m", "harness", "run", "--workload", "fault_memory,fault_memory",
                            "--param", "mib=4096", "--repeats", "1", "--warmup", "0", "--out", str(out)],
                           env=harness_cli.env(), text=True, capture_output=True, timeout=300, preexec_fn=enter)
    finally:
        subprocess.run(["sh", "-c", f"cat {procs} > /dev/null"], check=False)
        try:
            cgroup.rmdir()
        except OSError:
            pass
    assert r.returncode == 1, r.stdout + r.stderr
    assert "Traceback" not in r.stderr
    recs = read_jsonl(out / "results.jsonl")
    assert len(recs) == 2, "the harness survived the first OOM kill and ran the second case"
    for rec in recs:
        assert rec["status"] == "failed"
        assert "OOM killer" in rec["reason"] and "out of memory" in rec["reason"], rec["reason"]
        tree = rec["resources"]["process_tree"]
        assert tree["oom_kills"]["cgroup"] or tree["oom_kills"]["system"]
        assert 100 * 2**20 < tree["peak_rss_bytes"] <= 800 * 2**20


def test_a_case_that_fits_is_not_called_out_of_memory(harness_cli, tmp_path) -> None:
    """The control: the same workload within its memory passes and records its tree's peak RSS."""
    r = harness_cli("run", "--workload", "fault_memory", "--param", "mib=64", "--repeats", "1", "--warmup", "0",
                    "--out", str(tmp_path / "out"))
    assert r.returncode == 0, r.stdout + r.stderr
    (rec,) = read_jsonl(tmp_path / "out" / "results.jsonl")
    assert rec["status"] == "ok" and rec["metrics"]["held_mib"] == 64
    assert rec["resources"]["process_tree"]["peak_rss_bytes"] >= 64 * 2**20


@pytest.mark.parametrize("tree, code, expected", [
    ({"oom_kills": {"cgroup": 1, "system": 1}, "peak_rss_bytes": 2**30}, -9, "out of memory in its cgroup"),
    ({"oom_kills": {"cgroup": None, "system": 2}, "peak_rss_bytes": 2**30}, 137, "most likely out of memory"),
    ({"oom_kills": {"cgroup": 0, "system": 0}, "peak_rss_bytes": 2**30}, -9, ""),
    ({"oom_kills": {"cgroup": 1, "system": 1}}, 0, ""),      # a case that succeeded was not killed
    ({}, -9, ""),                                             # no guard report: no claim about memory
])
def test_oom_wording_follows_the_counters(tree, code, expected) -> None:
    said = ProcessResult(code, False, 1.0, "", tree).oom_killed
    assert (expected in said) if expected else said == ""
    if expected:
        assert "1024 MiB" in said


def test_the_system_oom_counter_is_read_on_linux() -> None:
    if not pathlib.Path("/proc/vmstat").exists():
        pytest.skip("no /proc/vmstat")
    assert isinstance(oom_counts()["system"], int)
