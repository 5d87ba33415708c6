import json
import os
import pathlib

import pytest

from harness.errors import UsageError
from harness.judging.claims import Claim
from conftest import make_record
from harness.results.record import upgrade, upgrade_v1
from harness.results.schema import schema_errors
from harness.results.store import append_record, load_records, read_records

FIXTURE_V1 = pathlib.Path(__file__).parent / "fixtures" / "records-v1.jsonl"

RECORD = make_record()


def test_valid_record_round_trips(tmp_path) -> None:
    path = tmp_path / "r.jsonl"
    append_record(path, RECORD)
    append_record(path, RECORD)
    records, problems = read_records(path)
    assert len(records) == 2 and problems == []
    assert records[0] == RECORD and records[0].to_json() == RECORD.to_json()


def test_invalid_record_is_refused_and_nothing_is_written(tmp_path) -> None:
    path = tmp_path / "r.jsonl"
    bad = make_record(status="great")
    assert schema_errors(bad.to_json())
    with pytest.raises(ValueError, match="status"):
        append_record(path, bad)
    assert not path.exists() or path.read_text() == ""


def test_torn_and_corrupt_lines_are_reported_by_line(tmp_path) -> None:
    path = tmp_path / "r.jsonl"
    append_record(path, RECORD)
    with open(path, "a") as f:
        f.write(json.dumps({"schema": "other"}) + "\n")
        f.write(json.dumps(RECORD.to_json())[:50])  # a torn last line, as from a killed writer
    records, problems = read_records(path)
    assert len(records) == 1
    assert any(":2:" in p and "schema" in p for p in problems)
    # Appending after a torn line starts a new line: the new record survives.
    append_record(path, RECORD)
    records, problems = read_records(path)
    assert len(records) == 2
    assert any(":3:" in p and "not valid JSON" in p for p in problems)


def test_folders_and_missing_paths(tmp_path) -> None:
    append_record(tmp_path / "a.jsonl", RECORD)
    records, _ = load_records([tmp_path])
    assert len(records) == 1
    with pytest.raises(UsageError, match="no such results"):
        load_records([tmp_path / "missing.jsonl"])
    empty = tmp_path / "empty"
    os.mkdir(empty)
    with pytest.raises(UsageError, match="no \\*.jsonl"):
        load_records([empty])


def test_schema_is_closed_at_the_top_and_in_the_harness_own_parts() -> None:
    good = RECORD.to_json()
    assert schema_errors(good) == []
    assert any("additional" in e.lower() for e in schema_errors(dict(good, surprise=1)))
    assert schema_errors(dict(good, launch=dict(good["launch"], surprise=1)))
    assert schema_errors(dict(good, claims=[dict(Claim("x", ">", 1).evaluate({"x": 2}).to_json(), extra=1)]))
    assert schema_errors(dict(good, metrics={"anything": {"nested": [1, 2]}})) == []   # plugin-owned: open


def test_version_1_files_still_load_and_keep_their_figures() -> None:
    raw = [json.loads(line) for line in FIXTURE_V1.read_text().splitlines()]
    assert {r["schema_version"] for r in raw} == {1}
    records, problems = read_records(FIXTURE_V1)
    assert problems == [] and len(records) == len(raw) == 4
    for old, new in zip(raw, records):
        assert new.case_id == old["case_id"] and new.status == old["status"]
        assert new.samples == old["samples"] and new.metrics == old["metrics"]
        assert schema_errors(new.to_json()) == []          # upgraded records are valid version 4
        for c_old, c_new in zip(old["claims"], new.claims):
            assert c_new.passed is c_old["passed"]
            if c_old["passed"] is None:
                assert c_new.status in ("not_applicable", "not_evaluated")
    statuses = {c.status for r in records for c in r.claims}
    assert {"pass", "not_applicable"} <= statuses
    baseline = next(r for r in records if r.swept == {"msf": 1})
    assert {c.status for c in baseline.claims if c.relative_to} == {"not_applicable"}
    assert upgrade_v1(raw[0])["schema_version"] == 2 and upgrade(raw[0])["schema_version"] == 4
    judged = [c for r in records for c in r.claims if c.status in ("pass", "fail")]
    assert judged and all(c.interval is None and c.interval_method.startswith("point estimate") for c in judged)


def test_version_2_verdicts_read_as_judged_on_a_point_estimate(tmp_path) -> None:
    """A schema-2 record keeps its verdicts as they were judged, marked as point estimates; the
    report says so rather than inventing an interval."""
    line = next(ln for ln in (FIXTURE_V1.parent / "records" / "cross-arch" / "ppc64le" / "results.jsonl")
                .read_text().splitlines() if '"status":"pass"' in ln)
    raw = json.loads(line)
    assert raw["schema_version"] == 2 and schema_errors(raw, 2) == []
    path = tmp_path / "v2.jsonl"
    path.write_text(line + "\n")
    (rec,), problems = read_records(path)
    assert problems == [] and schema_errors(rec.to_json()) == []
    before = {(c["metric"], c["status"]) for c in raw["claims"]}
    assert {(c.metric, c.status) for c in rec.claims} == before
    for c in rec.claims:
        assert c.interval is None and c.confidence is None
        assert c.interval_method.startswith("point estimate") == (c.status in ("pass", "fail"))
