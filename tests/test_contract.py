"""The plugin contract as an author meets it: hooks receive exactly the stored line, the contract's
names come from `harness`, and harness.testing runs a workload in-process with a real phase clock."""
import json

import pytest

from harness import Claim, Control, Param, UsageError, Workload
from harness.testing import run_once


def test_a_hook_receives_the_line_as_stored_with_nan_as_null_and_the_note(hostile, tmp_path) -> None:
    add, run = hostile
    seen = tmp_path / "seen.jsonl"
    add("keeps_records", f"""
        import json

        @hookimpl
        def harness_case_finished(record):
            with open({str(seen)!r}, "a") as f:
                f.write(json.dumps(record, allow_nan=False) + "\\n")   # a NaN here would raise
        """)
    out = tmp_path / "out"
    r = run("run", "--workload", "fault_nan", "--repeats", "1", "--warmup", "0", "--out", str(out))
    assert r.returncode == 0 and "keeps_records" not in r.stderr, r.stdout + r.stderr
    (hooked,) = [json.loads(ln) for ln in seen.read_text().splitlines()]
    (stored,) = [json.loads(ln) for ln in (out / "results.jsonl").read_text().splitlines()]
    assert hooked == stored
    assert hooked["metrics"]["loss"] is None and "non-finite values stored as null" in hooked["reason"]


class Counts(Workload):
    name = "counts"
    params = {"n": Param(int, default=3, minimum=1), "broken": Param(bool, default=False)}
    sizes = {"smoke": {"n": 2}, "small": {}, "paper": {"n": 100}}
    variation = {"total": "exact"}
    claims = [Claim("total", "==", 3, control=Control({"broken": True}, "a wrong sum must fail"))]

    def setup(self, ctx):
        ctx.state["values"] = list(range(ctx.params["n"] + 1))

    def run(self, ctx):
        with ctx.phase("sum"):
            total = sum(ctx.state["values"]) + (1 if ctx.params["broken"] else 0)
        ctx.replicates("total", {"seed0": total})
        return {"total": total, "warm": ctx.warmup, "repeat": ctx.repeat}


def test_run_once_runs_setup_repeats_and_phases_in_process() -> None:
    m = run_once(Counts, size="smoke", repeats=3, warmup=1, mpi=False)
    assert m["total"] == 3 and m["repeat"] == 2 and m["warm"] is False
    assert m.phases["sum"]["count"] == 1 and len(m.seconds) == 3
    assert m.replicates == {"total": {"seed0": [3.0, 3.0, 3.0]}} and m.metric_samples["total"] == [3, 3, 3]
    assert run_once(Counts(), params={"broken": True}, mpi=False)["total"] == 4
    with pytest.raises(RuntimeError, match="no MPI communicator"):
        m.ctx.comm


def test_run_once_refuses_what_a_run_refuses() -> None:
    with pytest.raises(UsageError, match="n"):
        run_once(Counts, params={"n": 0}, mpi=False)

    class NoSmoke(Counts):
        name = "no_smoke"
        sizes = {"small": {}}
    with pytest.raises(UsageError, match="no 'smoke' size"):
        run_once(NoSmoke, mpi=False)


@pytest.mark.mpi
def test_run_once_measures_as_a_real_run_does(harness_cli, tmp_path) -> None:
    """One repeat loop (issue 41): a plugin's unit test and `harness run` give the same metric
    names, replicates (metric, id and count) and phases for the same workload, size and repeats."""
    from harness_plugins.psgd_svm import PsgdSvm

    once = run_once(PsgdSvm(), "smoke", repeats=2, artifact_dir=tmp_path / "once")
    r = harness_cli("run", "--workload", "psgd_svm", "--size", "smoke", "--ranks", "1", "--repeats", "2",
                    "--warmup", "0", "--out", str(tmp_path / "run"))
    assert r.returncode in (0, 1), r.stdout + r.stderr
    (rec,) = [json.loads(ln) for ln in (tmp_path / "run" / "results.jsonl").read_text().splitlines()]
    assert set(once) == set(rec["metrics"])
    assert set(once.metric_samples) == set(rec["metric_samples"])
    assert {k: sorted(v) for k, v in once.replicates.items()} == {k: sorted(v) for k, v in rec["replicates"].items()}
    assert all(len(values) == 1 for by_id in once.replicates.values() for values in by_id.values())  # a seed a repeat
    assert set(once.phases) == set(rec["phases"]) and len(once.seconds) == len(rec["samples"]) == 2
