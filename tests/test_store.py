import copy
import json
import os

import pytest

from harness.errors import UsageError
from harness.results.schema import schema_errors
from harness.results.store import append_record, load_records, read_records

RECORD = {
    "schema": "hpml-harness/record", "schema_version": 1, "id": "0123456789abcdef", "case_id": "w[smoke]{}",
    "run_id": "r", "created": "2026-12-02T00:00:00+00:00", "status": "ok", "reason": "",
    "workload": {"name": "w", "source": "t:w"}, "size": "smoke", "params": {},
    "backend": {"requested": None, "verified": None, "evidence": {}, "warnings": [], "environment": {}},
    "launch": {"launcher": "local", "ranks": 1, "threads": 1, "command": ["python"]},
    "hardware": {"arch": "x86_64", "cpu": {}}, "profile": {"name": None},
    "software": {"python": "3", "harness": "0", "packages": {}}, "environment": {},
    "protocol": {"repeats": 3, "warmup": 1}, "samples": [1.0, 1.0, 1.0],
    "stats": {"n": 3, "median": 1.0, "iqr": 0.0, "ci95": [1.0, 1.0], "cov": 0.0, "unstable": False},
    "phases": {}, "comm": None, "resources": {}, "system_load": {}, "metrics": {}, "claims": [],
}


def test_valid_record_round_trips(tmp_path) -> None:
    path = tmp_path / "r.jsonl"
    append_record(path, RECORD)
    append_record(path, RECORD)
    records, problems = read_records(path)
    assert len(records) == 2 and problems == []


def test_invalid_record_is_refused_and_nothing_is_written(tmp_path) -> None:
    path = tmp_path / "r.jsonl"
    bad = copy.deepcopy(RECORD)
    bad["status"] = "great"
    assert schema_errors(bad)
    with pytest.raises(ValueError, match="status"):
        append_record(path, bad)
    assert not path.exists() or path.read_text() == ""


def test_torn_and_corrupt_lines_are_reported_by_line(tmp_path) -> None:
    path = tmp_path / "r.jsonl"
    append_record(path, RECORD)
    with open(path, "a") as f:
        f.write(json.dumps({"schema": "other"}) + "\n")
        f.write(json.dumps(RECORD)[:50])  # a torn last line, as from a killed writer
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
