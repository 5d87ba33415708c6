"""`harness check`: this node against a reference of its kind, on real runs of this machine.

The runs are the session's roofline series (conftest.real_series): four plain runs and four with
NUMBA_DISABLE_JIT=1, each a separate `harness run` of one case (10 repeats, one thread)."""
from __future__ import annotations

import json
import pathlib

import pytest
import xmlschema

from conftest import ROOT, read_jsonl

pytestmark = pytest.mark.slow
SCHEMA = xmlschema.XMLSchema(str(ROOT / "tests" / "fixtures" / "junit-10.xsd"))
CASE = ["--workload", "roofline", "--size", "smoke", "--backend", "openblas", "--threads", "1", "--repeats", "10",
        "--param", "gemm_sizes=256", "--param", "triad_mib=1"]


def _write(path: pathlib.Path, records: list[dict]) -> pathlib.Path:
    path.mkdir(parents=True, exist_ok=True)
    (path / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def _check(harness_cli, tmp_path: pathlib.Path, reference: pathlib.Path, *args: str, env=None):
    out = tmp_path / f"checks-{len(list(tmp_path.glob('checks-*')))}.json"
    r = harness_cli("check", "--reference", str(reference), "--json", str(out), *args, env=env)
    return r, (json.loads(out.read_text()) if out.exists() else None)


def test_fresh_runs_pass_against_earlier_runs_and_a_switched_off_jit_fails_naming_what_differs(
        harness_cli, real_series, tmp_path) -> None:
    before, after = real_series
    plain = read_jsonl(before / "results.jsonl")
    reference = _write(tmp_path / "reference", plain[:2])      # two runs: the machine's run-to-run spread
    for i, run in enumerate(plain[2:]):                        # two fresh runs, each checked on its own
        r, (check,) = _check(harness_cli, tmp_path, reference, str(_write(tmp_path / f"fresh{i}", [run])))
        assert r.returncode == 0, r.stdout + r.stderr
        assert check["status"] in ("pass", "inconclusive"), check
        assert len(check["reference_runs"]) == 2 and check["low"] <= check["ratio"] <= check["high"]
    r, checks = _check(harness_cli, tmp_path, reference, str(after), "--junit", str(tmp_path / "j.xml"))
    assert r.returncode == 1, r.stdout + r.stderr
    assert {c["status"] for c in checks} == {"fail"} and len(checks) == 4
    assert all(c["low"] > 1.1 for c in checks)
    assert "env:NUMBA_DISABLE_JIT unset -> 1" in checks[0]["differs"]
    assert "roofline[smoke]{gemm_sizes=[256],triad_mib=1} openblas r1t1" in r.stdout
    assert "NUMBA_DISABLE_JIT" in r.stdout
    SCHEMA.validate(str(tmp_path / "j.xml"))
    junit = (tmp_path / "j.xml").read_text()
    assert junit.count("<failure") == 4 and "slower than the reference" in junit


def test_other_work_or_another_machine_kind_is_no_reference_never_a_pass(harness_cli, real_series, tmp_path) -> None:
    before, _ = real_series
    plain = read_jsonl(before / "results.jsonl")
    other_version = dict(plain[3], workload={**plain[3]["workload"], "version": "0" * 12, "protocol_version": "0"})
    other_machine = dict(plain[3], machine={**plain[3]["machine"], "key": "m-000000000000"})
    r, checks = _check(harness_cli, tmp_path, before, str(_write(tmp_path / "other", [other_version, other_machine])))
    assert r.returncode == 1 and "no case was judged" in r.stderr, r.stdout + r.stderr   # no evidence: no exit 0
    assert [c["status"] for c in checks] == ["no reference", "no reference"]
    assert checks[0]["reason"].startswith("other work: the reference ran workload version")
    assert "holds no machine of this one's key" in checks[1]["reason"]


def fresh_reference(harness_cli, out: pathlib.Path, runs: int = 2) -> pathlib.Path:
    """Runs of the roofline case just before the check: this VM's speed drifts by a third over
    minutes (the host's load), so a reference made at the session's start would judge the drift."""
    for _ in range(runs):
        r = harness_cli("run", *CASE, "--out", str(out))
        assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    return out


def test_check_runs_the_selection_itself(harness_cli, tmp_path) -> None:
    reference = fresh_reference(harness_cli, tmp_path / "reference")
    r, (check,) = _check(harness_cli, tmp_path, reference, *CASE, "--out", str(tmp_path / "run"),
                         "--junit", str(tmp_path / "j.xml"))
    assert r.returncode == 0, r.stdout + r.stderr
    assert check["status"] in ("pass", "inconclusive") and len(check["reference_runs"]) == 2
    junit = (tmp_path / "j.xml").read_text()     # the check's suite, not the run's written over it
    SCHEMA.validate(str(tmp_path / "j.xml"))
    assert "harness check against" in junit and "harness run" not in junit
    assert len(read_jsonl(tmp_path / "run" / "results.jsonl")) == 1


@pytest.mark.parametrize(("args", "message"), [
    (["--reference", "/no/such/folder", "x"], "--reference /no/such/folder: does not exist"),
    (["--reference", "."], "give either RESULTS to check or --suite/--workload"),
    (["--reference", ".", "--workload", "roofline", "some-results"], "give either RESULTS"),
    (["--reference", ".", "--tolerance", "-0.1", "x"], "--tolerance -0.1"),
])
def test_bad_input_is_exit_2_naming_the_option(harness_cli, args, message) -> None:
    r = harness_cli("check", *args)
    assert r.returncode == 2 and message in r.stderr, r.stderr


def test_until_decided_adds_repeats_while_the_check_is_inconclusive(harness_cli, real_series, tmp_path) -> None:
    """At tolerance 0 a fresh run is rarely decided in 3 repeats: the check asks for rounds of more
    (up to 6), judged at the level corrected for its looks, as --until-decided does for claims."""
    before, _ = real_series
    case = [a if a != "10" else "3" for a in CASE]
    r, (check,) = _check(harness_cli, tmp_path, before, *case, "--tolerance", "0", "--until-decided",
                         "--max-repeats", "6", "--out", str(tmp_path / "run"))
    assert r.returncode in (0, 1), r.stdout + r.stderr
    (rec,) = read_jsonl(tmp_path / "run" / "results.jsonl")
    info = rec["protocol"]["until_decided"]
    assert info["looks_planned"] == 2 and check["confidence"] == pytest.approx(info["per_look_confidence"])
    if check["status"] == "inconclusive":
        assert len(rec["samples"]) == 6 and info["looks"] == 2
    else:
        assert check["status"] in ("pass", "fail") and info["stopped"] in ("decided", "")


def test_no_verdict_without_evidence(harness_cli, real_series, tmp_path) -> None:
    """Issue 55: samples that are not durations (Infinity, 1.7e308 s), one run written ten times,
    a stored confidence level of 1e-6: none of them is evidence for a pass, and a check that
    judged nothing never exits 0."""
    before, _ = real_series
    plain = read_jsonl(before / "results.jsonl")
    run = plain[2]
    n = len(run["samples"])
    infinite = dict(plain[0], samples=[float("inf")] * n)
    huge = dict(plain[1], samples=[1.7e308] * n)
    for bad in (infinite, huge):        # a reference of such runs alone is refused, naming the field
        r = harness_cli("check", "--reference", str(_write(tmp_path / f"ref-{id(bad)}", [bad])),
                        str(_write(tmp_path / f"run-{id(bad)}", [run])))
        assert r.returncode == 2 and "samples[0]" in r.stderr and "not a duration" in r.stderr, r.stderr
    # a normal run pooled with an all-Infinity one: the Infinity run is left out, the verdict is the normal's
    r, (check,) = _check(harness_cli, tmp_path, _write(tmp_path / "mixed", [plain[0], infinite]),
                         str(_write(tmp_path / "one", [run])))
    assert check["reference_runs"] == [plain[0]["run_id"]] and check["ratio"] and check["ratio"] > 0.1
    # this run's own samples not durations: not ok, exit 1
    r, (check,) = _check(harness_cli, tmp_path, _write(tmp_path / "ref2", plain[:2]),
                         str(_write(tmp_path / "bad-run", [dict(run, samples=[float("inf")] * n)])))
    assert r.returncode == 1 and check["status"] == "not ok" and "no evidence" in check["reason"]
    # one run written ten times is one run: the same verdict as written once
    r1, (once,) = _check(harness_cli, tmp_path, _write(tmp_path / "ref-once", [plain[0]]), str(_write(tmp_path / "r1", [run])))
    r10, (ten,) = _check(harness_cli, tmp_path, _write(tmp_path / "ref-ten", [plain[0]] * 10), str(_write(tmp_path / "r10", [run])))
    assert ten["status"] == once["status"] and ten["reference_runs"] == once["reference_runs"]
    # a stored level of 1e-6 is not used; --confidence is applied to stored results
    tiny = dict(run, protocol=dict(run["protocol"], confidence=1e-6))
    r, (check,) = _check(harness_cli, tmp_path, _write(tmp_path / "ref3", plain[:2]), str(_write(tmp_path / "tiny", [tiny])))
    assert check["confidence"] == 0.95
    r, (wide,) = _check(harness_cli, tmp_path, _write(tmp_path / "ref4", plain[:2]), str(_write(tmp_path / "w", [run])),
                        "--confidence", "0.999")
    assert wide["confidence"] == 0.999
    for path in tmp_path.glob("checks-*.json"):      # strict JSON: no NaN, no Infinity
        json.loads(path.read_text(), parse_constant=lambda c: pytest.fail(f"{path.name}: {c}"))


def test_resume_judges_the_records_already_there(harness_cli, tmp_path) -> None:
    """Issue 55: `check --resume` over a results folder whose case is already ok judges that
    record (a 30x slower one fails), never "0 to run", an empty table and exit 0."""
    reference = fresh_reference(harness_cli, tmp_path / "reference")
    out = tmp_path / "out"
    slow = dict(read_jsonl(reference / "results.jsonl")[0])
    slow["samples"] = [30 * s for s in slow["samples"]]
    slow["id"], slow["run_id"] = "f" * 32, "slow-run"
    _write(out, [slow])
    r, checks = _check(harness_cli, tmp_path, reference, *CASE, "--out", str(out), "--resume")
    assert r.returncode == 1, r.stdout + r.stderr
    assert [c["status"] for c in checks] == ["fail"] and checks[0]["ratio"] > 10
