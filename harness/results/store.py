"""The JSONL results store: one record per line, appended atomically, read tolerantly.

Each record is written with a single ``write`` on an ``O_APPEND`` descriptor under an
exclusive lock and fsynced, so a killed run leaves whole lines only. Readers still
skip (and report) a torn or invalid line, naming the file and line.
"""
from __future__ import annotations

import errno
import fcntl
import itertools
import json
import math
import os
import pathlib
import re
import stat
from collections.abc import Iterable, Iterator
from typing import Any

from harness.errors import UsageError
from harness.results.record import Record, upgrade
from harness.results.schema import schema_errors, validate
from harness.output.safe_text import escaped_surrogates, surrogate_paths

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


MAX_LINE_BYTES = 64 * 1024 * 1024   # no record comes near this; a longer line is not one
MAX_DEPTH = 64                       # records nest a handful of levels
MAX_TEXT_CHARS = 1024 * 1024         # one string of a record (a metric, the stderr tail)
MAX_REASON_CHARS = 16 * 1024         # a record's reason (an exception message, say)


def cut_text(text: str, limit: int) -> str:
    """``text`` kept whole up to ``limit`` characters, else its head and a note of what was cut."""
    if len(text) <= limit:
        return text
    return text[:limit] + f" ... [cut: {len(text) - limit} more characters]"


def bounded_json(value: Any, where: str, cut: list[str]) -> Any:
    """``value`` with every string longer than MAX_TEXT_CHARS cut (their paths added to ``cut``)."""
    if isinstance(value, str):
        if len(value) > MAX_TEXT_CHARS:
            cut.append(where)
            return cut_text(value, MAX_TEXT_CHARS)
        return value
    if isinstance(value, dict):
        return {k: bounded_json(v, f"{where}.{k}" if where else str(k), cut) for k, v in value.items()}
    if isinstance(value, list):
        return [bounded_json(v, f"{where}[{i}]", cut) for i, v in enumerate(value)]
    return value


def _add_reason(as_json: dict[str, Any], note: str) -> None:
    as_json["reason"] = f"{as_json['reason']}; {note}" if as_json.get("reason") else note


def regular_or_absent(path: pathlib.Path, what: str = "results file") -> None:
    """Refuse anything at a results path but a regular file (or nothing): a FIFO would hang the
    harness, /dev/null would swallow records, /dev/full would fail every write, a folder cannot be
    read as one."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return     # absent, or unreachable: the open that follows says why
    if not stat.S_ISREG(mode):
        kind = ("a folder" if stat.S_ISDIR(mode) else "a FIFO" if stat.S_ISFIFO(mode)
                else "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) else "a socket" if stat.S_ISSOCK(mode)
                else "not a regular file")
        via = f" (a link to {os.path.realpath(path)})" if os.path.islink(path) else ""
        raise UsageError(f"{path}: is {kind}{via}, not a regular {what}: remove or rename it, "
                         "or choose another --out")


def record_line(record: Record) -> bytes:
    """The record as one validated JSON line (see :func:`stored_form`)."""
    return stored_form(record)[1]


def stored_form(record: Record) -> tuple[dict[str, Any], bytes]:
    """(the dict, its JSON line) as the record is stored: validated, within the limits readers
    apply: non-finite numbers stored as null, over-long strings cut, both named in the reason; a
    record still over MAX_LINE_BYTES keeps its timings but loses its metrics and fails, saying why."""
    replaced: list[str] = []
    as_json = finite_json(record.to_json(), "", replaced)
    if replaced:
        _add_reason(as_json, f"non-finite values stored as null: {', '.join(replaced[:8])}"
                             f"{' ...' if len(replaced) > 8 else ''}")
    cut: list[str] = []
    as_json["reason"] = cut_text(as_json.get("reason") or "", MAX_REASON_CHARS)
    as_json = bounded_json(as_json, "", cut)
    if cut:
        _add_reason(as_json, f"values over {MAX_TEXT_CHARS // 1024} KiB cut: {', '.join(cut[:8])}"
                             f"{' ...' if len(cut) > 8 else ''}")
    bad = escaped_surrogates(surrogate_paths(as_json))
    if bad:
        as_json = escaped_surrogates(as_json)
        as_json["status"] = "failed" if as_json.get("status") == "ok" else as_json.get("status")
        _add_reason(as_json, f"text that is not valid Unicode (a lone surrogate) at {', '.join(bad[:8])}"
                             f"{' ...' if len(bad) > 8 else ''}: stored escaped, and the case fails "
                             "(return str values and names that encode as UTF-8)")
    validate(as_json)
    data = (json.dumps(as_json, separators=(",", ":"), allow_nan=False) + "\n").encode()
    if len(data) > MAX_LINE_BYTES:
        size = len(data)
        as_json.update(metrics={}, metric_samples={}, replicates={}, claims=[], status="failed")
        _add_reason(as_json, f"the record was {size / 2**20:.0f} MiB, over the {MAX_LINE_BYTES // 2**20} MiB "
                             "a reader accepts: its metrics were dropped (return fewer or smaller metrics)")
        validate(as_json)
        data = (json.dumps(as_json, separators=(",", ":"), allow_nan=False) + "\n").encode()
    return as_json, data


def append_record(path: pathlib.Path, record: Record) -> dict[str, Any]:
    """Validate ``record`` and append it as one line of ``path``: all of the line or nothing;
    returns the dict stored (what hooks receive).

    The line is bounded as :func:`record_line` says, so no reader refuses what the harness
    wrote. A write that fails part-way (a full disk, a file size limit) is cut back to the file's
    previous length and raised as a UsageError naming the file."""
    stored, data = stored_form(record)
    regular_or_absent(path)
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
            try:
                os.ftruncate(fd, size)
            except OSError:
                pass    # nothing to roll back on a file that cannot be truncated
            raise UsageError(f"{path}: could not append the record of {record.case_id} ({exc.strerror}); "
                             "the file is as it was before; free space (or raise the file size limit) "
                             "and rerun with --resume") from None
    finally:
        os.close(fd)
    return stored


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
    """(the record, '') from one line's JSON of schema version 1 to 4, or (None, the first schema problem)."""
    version = data.get("schema_version") if isinstance(data, dict) else None
    if version not in (1, 2, 3, 4) or isinstance(version, bool):
        return None, f"schema_version {version!r} is not one this harness reads (1 to 4)"
    errors = schema_errors(data, version)
    if errors:
        return None, errors[0]
    return Record.from_json(upgrade(data)), ""


_NOT_BRACKET = re.compile(r"[^\[\]{}]+")
_DEPTH_STEP = {"[": 1, "{": 1, "]": -1, "}": -1}


def _too_deep(line: str, data: Any) -> bool:
    """True when the parsed line's lists and objects nest deeper than MAX_DEPTH. The brackets of
    the text give an upper bound in C-speed steps (brackets inside strings only raise it); only a
    line whose bound passes the limit gets the exact walk over its containers (a line nested
    beyond the parser's own limit is a RecursionError, caught by the caller)."""
    brackets = _NOT_BRACKET.sub("", line)
    if len(brackets) <= 2 * MAX_DEPTH or max(itertools.accumulate(map(_DEPTH_STEP.__getitem__, brackets))) <= MAX_DEPTH:
        return False
    level = [data]                     # the values at depth 1, 2, ...
    for _ in range(MAX_DEPTH):
        level = [v for c in level if isinstance(c, (list, dict))
                 for v in (c.values() if isinstance(c, dict) else c)]
        if not level:
            return False
    return any(isinstance(v, (list, dict)) for v in level)


_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")    # what a surrogate looks like in JSON text


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
    if _too_deep(line, data):
        return None, f"nested deeper than {MAX_DEPTH} levels"
    if _SURROGATE_ESCAPE.search(line) and (bad := surrogate_paths(data)):
        return None, (f"{bad[0]} holds a lone surrogate (\\ud800 to \\udfff unpaired), text that is not valid "
                      "Unicode: fix or remove the line")
    try:
        return parse_record(data)
    except Exception as exc:   # schema-valid but unusable: the reader must survive any line
        return None, f"cannot be read as a record ({type(exc).__name__}: {str(exc)[:120]})"


def _lines(path: pathlib.Path) -> Iterator[tuple[int, str]]:
    """(line number, line) of a results file, one at a time; a line longer than MAX_LINE_BYTES is
    given as its first MAX_LINE_BYTES + 1 characters (enough to refuse it), never held whole."""
    regular_or_absent(path)
    with open(path, encoding="utf-8", errors="replace") as f:
        lineno = 0
        while True:
            line = f.readline(MAX_LINE_BYTES + 1)
            if not line:
                return
            lineno += 1
            if len(line) > MAX_LINE_BYTES and not line.endswith("\n"):
                while True:                       # skip the rest of the over-long line
                    rest = f.readline(MAX_LINE_BYTES)
                    if not rest or rest.endswith("\n"):
                        break
            yield lineno, line


def iter_records(path: pathlib.Path, problems: list[str]) -> Iterator[Record]:
    """The valid records of one JSONL file, one at a time (older versions upgraded); one
    'file:line: problem' string per bad line is added to ``problems``. Readers stream through
    this, so memory does not grow with the file."""
    for lineno, line in _lines(path):
        if not line.strip():
            continue
        record, problem = parse_line(line)
        if record is None:
            problems.append(f"{escaped_surrogates(str(path))}:{lineno}: {problem}; line skipped")
            continue
        yield record


def read_records(path: pathlib.Path) -> tuple[list[Record], list[str]]:
    """Valid records of one JSONL file, and one 'file:line: problem' string per bad line."""
    problems: list[str] = []
    records = list(iter_records(path, problems))
    return records, problems


_NOT_JSON_LINES = {b"\x1f\x8b": "gzip-compressed: gunzip it first",
                   b"\xff\xfe": "UTF-16 text: convert it to UTF-8 (iconv -f UTF-16 -t UTF-8)",
                   b"\xfe\xff": "UTF-16 text: convert it to UTF-8 (iconv -f UTF-16 -t UTF-8)"}


def _unreadable(path: pathlib.Path) -> str | None:
    """Why a results file cannot be read (a dangling link, a link loop, no permission, gzip or
    UTF-16 instead of UTF-8 JSON lines), or None when it can."""
    try:
        os.stat(path)
        with open(path, "rb") as f:
            head = f.read(2) if stat.S_ISREG(os.fstat(f.fileno()).st_mode) else b""
    except OSError as exc:
        kind = ("a dangling link" if exc.errno == errno.ENOENT and os.path.islink(path)
                else "a link loop" if exc.errno == errno.ELOOP else exc.strerror)
        return f"{escaped_surrogates(str(path))}: {kind}; skipped"
    if head in _NOT_JSON_LINES:
        return f"{escaped_surrogates(str(path))}: {_NOT_JSON_LINES[head]}; skipped"
    return None


def results_files(paths: Iterable[str | pathlib.Path], problems: list[str] | None = None) -> list[pathlib.Path]:
    """Expand folders to their ``*.jsonl`` files (a ``harness capture`` folder to its ``results/``
    folder's); a missing path, or one that is not a regular file (a FIFO, a device, a folder named
    like a results file), is a UsageError naming it. A file that cannot be read (a dangling link,
    a link loop, gzip or UTF-16) is skipped, its reason added to ``problems`` (the good files are
    read), or, without ``problems``, a UsageError."""
    files: list[pathlib.Path] = []
    for p in map(pathlib.Path, paths):
        if p.is_dir():
            found = sorted(p.glob("*.jsonl"))
            if not found and (p / "manifest.json").is_file() and (p / "results").is_dir():
                found = sorted((p / "results").glob("*.jsonl"))
            if not found:
                raise UsageError(f"{p}: no *.jsonl results files in this folder")
            for f in found:
                regular_or_absent(f)
        elif p.exists():
            regular_or_absent(p)
            found = [p]
        else:
            raise UsageError(f"{p}: no such results file or folder")
        skipped = [(f, why) for f in found if (why := _unreadable(f))]
        if skipped and problems is None:
            raise UsageError(skipped[0][1])
        if problems is not None:
            problems.extend(why for _, why in skipped)
        found = [f for f in found if f not in {g for g, _ in skipped}]
        if not found:
            raise UsageError(f"{p}: no readable results file here ({skipped[0][1]})")
        files.extend(found)
    return files


class DuplicateIds:
    """Record ids seen while reading: a record whose id another already had (a file concatenated
    with itself, a folder copied beside its original) is counted, and said once."""

    def __init__(self) -> None:
        self.seen: set[str] = set()
        self.repeated = 0
        self.first: tuple[str, str] | None = None

    def add(self, record_id: str, path: str | pathlib.Path) -> None:
        if record_id in self.seen:
            self.repeated += 1
            self.first = self.first or (record_id, escaped_surrogates(str(path)))
        else:
            self.seen.add(record_id)

    def problems(self) -> list[str]:
        if not self.repeated or self.first is None:
            return []
        record_id, path = self.first
        return [f"{self.repeated} record(s) repeat the id of an earlier one (first: {record_id} in {path}): "
                "each is read as it is; a results file was probably concatenated with itself or copied "
                "beside its original"]


def load_records(paths: Iterable[str | pathlib.Path]) -> tuple[list[Record], list[str]]:
    """All valid records of the given files/folders, with the problems of the bad lines."""
    records: list[Record] = []
    problems: list[str] = []
    ids = DuplicateIds()
    for f in results_files(paths, problems):
        for r in iter_records(f, problems):
            ids.add(r.id, f)
            records.append(r)
    problems += ids.problems()
    return records, problems
