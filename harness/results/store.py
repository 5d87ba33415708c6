"""The JSONL results store: one record per line, appended atomically, read tolerantly.

Each record is written with a single ``write`` on an ``O_APPEND`` descriptor under an
exclusive lock and fsynced, so a killed run leaves whole lines only. Readers still
skip (and report) a torn or invalid line, naming the file and line.
"""
from __future__ import annotations

import errno
import fcntl
import json
import math
import os
import pathlib
from collections.abc import Iterable
from typing import Any

from harness.errors import UsageError
from harness.results.record import Record, upgrade
from harness.results.schema import schema_errors, validate

RESULTS_NAME = "results.jsonl"


def finite_json(value: Any, where: str, replaced: list[str]) -> Any:
    """``value`` with every NaN or infinity replaced by None (JSON has neither); the JSON paths
    of the replaced values are added to ``replaced``."""
    if isinstance(value, float) and not math.isfinite(value):
        replaced.append(where)
        return None
    if isinstance(value, dict):
        return {k: finite_json(v, f"{where}.{k}" if where else str(k), replaced) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite_json(v, f"{where}[{i}]", replaced) for i, v in enumerate(value)]
    return value


def append_record(path: pathlib.Path, record: Record) -> None:
    """Validate ``record`` and append it as one line of ``path``: all of the line or nothing.

    Non-finite numbers are stored as null and named in the record's reason, so a NaN metric
    never costs the record. A write that fails part-way (a full disk, a file size limit) is cut
    back to the file's previous length and raised as a UsageError naming the file."""
    replaced: list[str] = []
    as_json = finite_json(record.to_json(), "", replaced)
    if replaced:
        note = f"non-finite values stored as null: {', '.join(replaced[:8])}{' ...' if len(replaced) > 8 else ''}"
        as_json["reason"] = f"{as_json['reason']}; {note}" if as_json.get("reason") else note
    validate(as_json)
    data = (json.dumps(as_json, separators=(",", ":"), allow_nan=False) + "\n").encode()
    try:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    except OSError as exc:
        raise UsageError(f"{path}: cannot open the results file for writing ({exc.strerror}); "
                         "choose a writable --out") from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        size = os.fstat(fd).st_size
        if size:
            # A torn last line (from a process killed by the kernel mid-write) must not swallow ours.
            with open(path, "rb") as f:
                f.seek(size - 1)
                if f.read(1) != b"\n":
                    data = b"\n" + data
        try:
            _write_all(fd, data)
        except OSError as exc:
            os.ftruncate(fd, size)
            raise UsageError(f"{path}: could not append the record of {record.case_id} ({exc.strerror}); "
                             "the file is as it was before; free space (or raise the file size limit) "
                             "and rerun with --resume") from None
    finally:
        os.close(fd)


def _write_all(fd: int, data: bytes) -> None:
    """Write every byte and fsync; a short write with no error (a full disk) is an ENOSPC."""
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        if written == 0:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        view = view[written:]
    os.fsync(fd)


def parse_record(data: Any) -> tuple[Record | None, str]:
    """(the record, '') from one line's JSON of schema version 1, 2 or 3, or (None, the first schema problem)."""
    version = data.get("schema_version") if isinstance(data, dict) else None
    if version not in (1, 2, 3) or isinstance(version, bool):
        return None, f"schema_version {version!r} is not one this harness reads (1, 2 or 3)"
    errors = schema_errors(data, version)
    if errors:
        return None, errors[0]
    return Record.from_json(upgrade(data)), ""


MAX_LINE_BYTES = 64 * 1024 * 1024   # no record comes near this; a longer line is not one
MAX_DEPTH = 64                       # records nest a handful of levels


def _too_deep(data: Any) -> bool:
    """True when the parsed line's lists and objects nest deeper than MAX_DEPTH (a walk over its
    containers, not its characters; a line nested beyond the parser's own limit is a
    RecursionError, caught by the caller)."""
    level = [data]                     # the values at depth 1, 2, ...
    for _ in range(MAX_DEPTH):
        level = [v for c in level if isinstance(c, (list, dict))
                 for v in (c.values() if isinstance(c, dict) else c)]
        if not level:
            return False
    return any(isinstance(v, (list, dict)) for v in level)


def parse_line(line: str) -> tuple[Record | None, str]:
    """(the record, '') of one results line, or (None, why it is not one). Never raises."""
    if len(line) > MAX_LINE_BYTES:
        return None, f"longer than {MAX_LINE_BYTES // 2**20} MiB"
    try:
        data = json.loads(line)
    except RecursionError:
        return None, f"nested deeper than {MAX_DEPTH} levels"
    except ValueError as exc:
        return None, f"not valid JSON ({getattr(exc, 'msg', str(exc))[:120]})"
    if _too_deep(data):
        return None, f"nested deeper than {MAX_DEPTH} levels"
    try:
        return parse_record(data)
    except Exception as exc:   # schema-valid but unusable: the reader must survive any line
        return None, f"cannot be read as a record ({type(exc).__name__}: {str(exc)[:120]})"


def read_records(path: pathlib.Path) -> tuple[list[Record], list[str]]:
    """Valid records of one JSONL file (version 1 upgraded to 2), and one 'file:line: problem'
    string per bad line."""
    records, problems = [], []
    with open(path, encoding="utf-8", errors="replace") as f:
        for lineno, line in enumerate(f, 1):
            if not line.strip():
                continue
            record, problem = parse_line(line)
            if record is None:
                problems.append(f"{path}:{lineno}: {problem}; line skipped")
                continue
            records.append(record)
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
