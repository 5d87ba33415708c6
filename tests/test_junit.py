"""`--junit FILE` on `harness run` and `harness controls`: valid against the common JUnit schema
(Jenkins' junit-10.xsd, validated with xmlschema from PyPI), with counts that match the run."""
from __future__ import annotations

import pathlib
import signal
import xml.etree.ElementTree as ET
from collections import Counter

import pytest

from conftest import ROOT, make_record, read_jsonl, signal_when
from harness.export import junit
from harness.judging.claims import ClaimVerdict, ControlOutcome

xmlschema = pytest.importorskip("xmlschema")
SCHEMA = xmlschema.XMLSchema(str(ROOT / "tests" / "fixtures" / "junit-10.xsd"))


def _cases(path: pathlib.Path) -> list[tuple[str, str, str]]:
    """(classname, name, outcome) per test case; outcome pass, failure or skipped."""
    out = []
    for tc in ET.parse(path).getroot().iter("testcase"):
        child = next((c.tag for c in tc if c.tag in ("failure", "skipped")), "pass")
        out.append((tc.get("classname"), tc.get("name"), child))
    return out


def test_run_junit_is_valid_and_its_counts_match_the_claims_and_cases(harness_cli, tmp_path) -> None:
    xml = tmp_path / "run.xml"
    r = harness_cli("run", "--workload", "probe,fault_raise,fault_needs_package", "--size", "smoke",
                    "--repeats", "2", "--out", str(tmp_path / "out"), "--junit", str(xml))
    assert r.returncode == 1, r.stdout + r.stderr              # fault_raise failed
    SCHEMA.validate(str(xml))
    records = read_jsonl(tmp_path / "out" / "results.jsonl")
    claims = Counter(v["status"] for rec in records for v in rec["claims"])
    statuses = Counter(rec["status"] for rec in records)
    cases = _cases(xml)
    claim_cases = Counter(outcome for _, name, outcome in cases if ": " in name)
    assert claim_cases["pass"] == claims["pass"] >= 1
    assert claim_cases["failure"] == claims["fail"] >= 1
    assert claim_cases["skipped"] == claims["inconclusive"] + claims["not_evaluated"] + claims["not_applicable"] >= 1
    case_rows = [(cls, outcome) for cls, name, outcome in cases if ": " not in name]
    assert sorted(case_rows) == [("fault_needs_package", "skipped"), ("fault_raise", "failure")]
    assert statuses["failed"] == 1 and statuses["skipped"] == 1
    root = ET.parse(xml).getroot()
    suite = root.find("testsuite")
    assert int(suite.get("tests")) == len(cases)
    assert int(suite.get("failures")) == claims["fail"] + statuses["failed"] + statuses["timeout"]
    assert int(suite.get("skipped")) == claim_cases["skipped"] + statuses["skipped"]
    # the summary line of the run's claim table says the same
    line = next(x for x in r.stdout.splitlines() if x.startswith("claims: "))
    assert f"{claims['pass']} pass" in line and f"{claims['fail']} fail" in line
    # the failed case carries its reason and its output's tail
    failed = next(tc for tc in root.iter("testcase") if tc.get("classname") == "fault_raise")
    assert failed.find("failure").get("type") == "failed" and failed.find("failure").get("message")


def test_controls_junit_counts_a_control_that_does_not_fail_as_a_failure(harness_cli, tmp_path) -> None:
    xml = tmp_path / "controls.xml"
    r = harness_cli("controls", "--workload", "gauge", "--out", str(tmp_path / "c"), "--junit", str(xml))
    assert r.returncode == 1, r.stdout + r.stderr              # the weakened claim is not caught
    SCHEMA.validate(str(xml))
    cases = _cases(xml)
    outcomes = Counter(outcome for _, _, outcome in cases)
    assert outcomes == {"pass": 1, "failure": 1, "skipped": 1}, cases
    summary = next(x for x in r.stdout.splitlines() if x.startswith("controls: "))
    assert summary.startswith(f"controls: {outcomes['pass']} of {outcomes['pass'] + outcomes['failure']} claim(s)")
    assert ET.parse(xml).getroot().find("testsuite").get("name").startswith("harness controls")
    strict = tmp_path / "strict.xml"
    harness_cli("controls", "--workload", "gauge", "--out", str(tmp_path / "c2"), "--strict", "--junit", str(strict))
    assert Counter(o for _, _, o in _cases(strict)) == {"pass": 1, "failure": 2}


def test_junit_holds_any_text_a_record_can_carry(tmp_path) -> None:
    """A crashed case's output may hold control characters and markup: the XML stays valid."""
    from harness.plan import Case
    case = Case("w", "smoke", {}, None, 1, 1, 1, 0, 10.0)
    bad = make_record(status="failed", reason="boom \x00\x1b[31m <&> ]]>", stderr_tail="\x07" * 5 + "tail",
                      samples=[], stats=None)
    ok = make_record(claims=[ClaimVerdict("x", ">=", 1.0, "fail", measured=0.5, interval=[0.4, 0.6]),
                             ClaimVerdict("x", "<=", 9.0, "inconclusive", reason="straddles \x01")])
    xml = tmp_path / "j.xml"
    junit.write(xml, [junit.run_suite("s", [(case, bad), (case, ok)]),
                      junit.controls_suite("c", [ControlOutcome("w", "x >= 1", "why", problem="control case failed")],
                                           strict=False)])
    SCHEMA.validate(str(xml))
    assert [o for _, _, o in _cases(xml)] == ["failure", "failure", "skipped", "failure"]


def test_junit_target_is_checked_before_anything_runs(harness_cli, tmp_path) -> None:
    r = harness_cli("run", "--workload", "probe", "--size", "smoke", "--out", str(tmp_path / "o"),
                    "--junit", str(tmp_path))
    assert r.returncode == 2 and "--junit" in r.stderr and "is a folder" in r.stderr
    assert not (tmp_path / "o").exists()
    r = harness_cli("controls", "--workload", "gauge", "--out", str(tmp_path / "c"),
                    "--junit", str(tmp_path / "no" / "such" / "j.xml"))
    assert r.returncode == 2 and "does not exist" in r.stderr


def test_a_run_stopped_by_a_signal_still_writes_its_junit(harness_cli, tmp_path) -> None:
    """A CI job killed at its time limit (SIGTERM) in its second case: the file says what ran (the
    first case's claims), which case the signal stopped (failure) and which it kept from running
    (skipped, "not run"), and names the signal; the records stay as they were written."""
    xml = tmp_path / "run.xml"
    pidfile = tmp_path / "pids"
    proc = harness_cli.popen("run", "--workload", "probe,fault_orphans,fault_raise", "--param", "seconds=60",
                             "--param", f"pidfile={pidfile}", "--repeats", "1", "--warmup", "0",
                             "--out", str(tmp_path / "out"), "--junit", str(xml))
    err = signal_when(proc, pathlib.Path(f"{pidfile}.0").exists, signal.SIGTERM, "the second case never started",
                      wait_s=120)
    assert proc.returncode == 128 + signal.SIGTERM, err
    assert "JUnit XML of the 2 case(s) before the stop" in err
    SCHEMA.validate(str(xml))
    records = read_jsonl(tmp_path / "out" / "results.jsonl")
    assert [r["workload"]["name"] for r in records] == ["probe", "fault_orphans"]
    cases = _cases(xml)
    probe_claims = [v["status"] for v in records[0]["claims"]]
    assert len([c for c in cases if c[0] == "probe"]) == len(probe_claims) >= 1
    assert [c[2] for c in cases if c[0] == "fault_orphans"] == ["failure"]
    assert [c[2] for c in cases if c[0] == "fault_raise"] == ["skipped"]
    root = ET.parse(xml).getroot()
    not_run = next(tc for tc in root.iter("testcase") if tc.get("classname") == "fault_raise").find("skipped")
    assert not_run.get("type") == "not run" and "stopped by SIGTERM" in not_run.get("message")
    props = {p.get("name"): p.get("value") for p in root.iter("property")}
    assert props["stopped_by"] == "SIGTERM" and props["machine"]


def test_submit_hands_junit_to_the_job_as_an_absolute_path(harness_cli, tmp_path) -> None:
    r = harness_cli("submit", "--workload", "probe", "--junit", "ci/junit.xml", "--dry-run", cwd=tmp_path)
    assert r.returncode == 2 and "--junit ci/junit.xml: the folder ci does not exist" in r.stderr
    (tmp_path / "ci").mkdir()
    r = harness_cli("submit", "--workload", "probe", "--junit", "ci/junit.xml", "--dry-run", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    (command,) = [line for line in r.stdout.splitlines() if " -m harness run " in line]
    assert f"--junit {tmp_path / 'ci' / 'junit.xml'}" in command
