"""The JSONL results store: one record per line, appended atomically, read tolerantly.

Each record is written with a single ``write`` on an ``O_APPEND`` descriptor under an
exclusive lock and fsynced, so a killed run leaves whole lines only. Readers still
skip (and report) a torn or invalid line, naming the file and line.
"""
from __future__ import annotations

import fcntl
import json
import os
import pathlib
from collections.abc import Iterable
from typing import Any

from harness.errors import UsageError
from harness.results.record import Record, upgrade_v1
from harness.results.schema import schema_errors, validate

RESULTS_NAME = "results.jsonl"


def append_record(path: pathlib.Path, record: Record) -> None:
    """Validate ``record`` and append it as one line of ``path``."""
    as_json = record.to_json()
    validate(as_json)
    data = (json.dumps(as_json, separators=(",", ":"), allow_nan=False) + "\n").encode()
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        size = os.fstat(fd).st_size
        if size:
            # A torn last line (from a process killed by the kernel mid-write) must not swallow ours.
            with open(path, "rb") as f:
                f.seek(size - 1)
                if f.read(1) != b"\n":
                    data = b"\n" + data
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        os.fsync(fd)
    finally:
        os.close(fd)


def parse_record(data: Any) -> tuple[Record | None, str]:
    """(the record, '') from one line's JSON of schema version 1 or 2, or (None, the first schema problem)."""
    version = data.get("schema_version") if isinstance(data, dict) else None
    if version not in (1, 2):
        return None, f"schema_version {version!r} is not one this harness reads (1 or 2)"
    errors = schema_errors(data, version)
    if errors:
        return None, errors[0]
    return Record.from_json(upgrade_v1(data) if version == 1 else data), ""


def read_records(path: pathlib.Path) -> tuple[list[Record], list[str]]:
    """Valid records of one JSONL file (version 1 upgraded to 2), and one 'file:line: problem'
    string per bad line."""
    records, problems = [], []
    with open(path, encoding="utf-8", errors="replace") as f:
        for lineno, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except ValueError as exc:
                problems.append(f"{path}:{lineno}: not valid JSON ({exc.msg}); line skipped")
                continue
            parsed, problem = parse_record(record)
            if parsed is None:
                problems.append(f"{path}:{lineno}: does not match the record schema ({problem}); line skipped")
                continue
            records.append(parsed)
    return records, problems


def results_files(paths: Iterable[str | pathlib.Path]) -> list[pathlib.Path]:
    """Expand folders to their ``*.jsonl`` files; a missing path is a UsageError."""
    files: list[pathlib.Path] = []
    for p in map(pathlib.Path, paths):
        if p.is_dir():
            found = sorted(p.glob("*.jsonl"))
            if not found:
                raise UsageError(f"{p}: no *.jsonl results files in this folder")
            files.extend(found)
        elif p.is_file():
            files.append(p)
        else:
            raise UsageError(f"{p}: no such results file or folder")
    return files


def load_records(paths: Iterable[str | pathlib.Path]) -> tuple[list[Record], list[str]]:
    """All valid records of the given files/folders, with the problems of the bad lines."""
    records, problems = [], []
    for f in results_files(paths):
        r, p = read_records(f)
        records.extend(r)
        problems.extend(p)
    return records, problems
