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
    assert r.returncode == 0, r.stdout + r.stderr
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
