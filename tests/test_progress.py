"""Progress of long cases: the worker's report, the parent's heartbeat off a terminal, and the
closing table of a run."""
import re
import subprocess
import sys

import pytest

from conftest import read_jsonl
from harness.progress import DEFAULT_HEARTBEAT_S, ProgressWriter, heartbeat_s, progress_text, read_progress


def test_the_heartbeat_defaults_to_30_s_and_a_bad_setting_keeps_it(monkeypatch) -> None:
    monkeypatch.delenv("HARNESS_HEARTBEAT_S", raising=False)
    assert heartbeat_s() == DEFAULT_HEARTBEAT_S == 30
    for bad in ("soon", "0", "-5"):
        monkeypatch.setenv("HARNESS_HEARTBEAT_S", bad)
        assert heartbeat_s() == 30
    monkeypatch.setenv("HARNESS_HEARTBEAT_S", "2.5")
    assert heartbeat_s() == 2.5


def test_the_worker_reports_repeat_phase_and_time_left(tmp_path) -> None:
    phase = ["train"]
    w = ProgressWriter(tmp_path / "progress.json", lambda: phase[0], period_s=0.05)
    try:
        w.repeat(0, 4, 1)        # the warmup
        w.repeat(1, 4, 1)        # measured repeat 1 of 3, one repeat timed so far
        deadline = __import__("time").time() + 5
        while not read_progress(tmp_path).get("repeat") and __import__("time").time() < deadline:
            __import__("time").sleep(0.05)
        text = progress_text(read_progress(tmp_path))
    finally:
        w.close()
    assert re.fullmatch(r"repeat 1/3, phase train, about \d+ s left", text), text
    assert progress_text({}) == "" and progress_text({"stage": "setup"}) == "setup"


@pytest.mark.slow
def test_a_long_case_off_a_terminal_prints_heartbeats_with_its_repeat(harness_cli, tmp_path) -> None:
    """Output to a pipe (CI, Slurm): one line per period while the case runs, saying which repeat."""
    out = tmp_path / "out"
    r = harness_cli("run", "--workload", "fault_slow", "--param", "seconds=2.5", "--repeats", "2", "--warmup", "0",
                    "--out", str(out), env={"HARNESS_HEARTBEAT_S": "1"})
    assert r.returncode == 0, r.stdout + r.stderr
    beats = [ln for ln in r.stdout.splitlines() if "fault_slow" in ln and " running " in ln]
    # 5 s of repeats at one line a second, less the worker's start-up: several lines, both repeats named
    assert len(beats) >= 4, r.stdout
    assert any("repeat 1/2" in b for b in beats) and any("repeat 2/2" in b for b in beats), r.stdout
    assert any("s left" in b for b in beats if "repeat 2/2" in b), r.stdout
    (rec,) = read_jsonl(out / "results.jsonl")
    assert rec["status"] == "ok"


def test_the_closing_table_lists_failed_cases_first_and_groups_claims() -> None:
    from rich.console import Console

    from conftest import make_record
    from harness.judging.claims import ClaimVerdict
    from harness.plan import Case
    from harness.report.closing import closing_table

    def case(msf: int) -> Case:
        return Case(workload="psgd_svm", size="smoke", params={"msf": msf, "n": 10}, backend=None, ranks=2,
                    threads=1, repeats=1, warmup=0, timeout=60, swept={"msf": msf})

    def verdict(status: str) -> ClaimVerdict:
        return ClaimVerdict(metric="gap", comparison=">=", threshold=0.0, status=status, measured=0.5,
                            interval=[0.1, 0.9], paper_value=0.0)
    ok = make_record(claims=[verdict("pass"), ClaimVerdict(metric="x", comparison=">=", threshold=1.0,
                                                           status="not_applicable")])
    also = make_record(claims=[verdict("inconclusive")])
    bad = make_record(status="failed", reason="rank 1 raised MemoryError\nmore", claims=[])
    console = Console(width=200, record=True, color_system=None)
    console.print(closing_table([(case(1), ok), (case(4), also), (case(16), bad)]))
    text = console.export_text()
    assert text.index("1 case(s) did not run ok") < text.index("paper claims")
    assert "failed: rank 1 raised MemoryError" in text and "more" not in text
    # the undecided case in full (its claim named once there), the passed one in one line per claim
    undecided = text.split("paper claims not passed")[1].split("paper claims passed")[0]
    assert undecided.count("gap >= 0") == 1 and "msf=4" in undecided and "inconclusive" in undecided
    assert "msf=1" not in undecided
    (passed,) = [ln for ln in text.splitlines() if ln.startswith("pass psgd_svm: gap >= 0")]
    assert "(1 of 2" in passed and "msf=1: 0.5 [0.1, 0.9]" in passed
    assert "n=10" not in text            # only the params a suite or sweep set name a case
    assert "1 claim(s) do not apply" in text


def test_import_harness_loads_neither_pandas_nor_numpy_nor_the_registry() -> None:
    code = ("import sys, harness; "
            "print(sorted(m for m in ('pandas', 'numpy', 'pluggy', 'harness.registry') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
    code = "import sys; from harness import Workload, Record, run_once; print('pandas' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip() == "False"


def test_the_closing_table_of_suite_all_fits_one_screen() -> None:
    """The issue's bound: the gallery's capture of suite all (real records of this machine kind),
    closed as a run closes it, is at most 60 lines at 160 columns; every claim is still there."""
    import pathlib

    from rich.console import Console

    from harness.plan import Case
    from harness.report.closing import closing_table
    from harness.results.store import read_records

    path = pathlib.Path(__file__).resolve().parent.parent / "gallery" / "amd-epyc-zen4-2c" / "results" / "results.jsonl"
    records, _ = read_records(path)
    finished = [(Case(r.workload.name, r.size, r.params, r.backend.requested, r.launch.ranks, r.launch.threads,
                      1, 0, 60.0, r.swept), r) for r in records if r.control is None]
    console = Console(width=160, record=True, color_system=None)
    console.print(closing_table(finished))
    text = console.export_text()
    assert len(text.splitlines()) <= 60, text
    claims = {(c.workload, v.text) for c, r in finished for v in r.claims if v.status != "not_applicable"}
    assert len(claims) >= 20
    for workload, claim in claims:      # each named (a long one may fold inside its cell)
        assert claim.split()[0][:16] in text, claim
