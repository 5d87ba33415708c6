"""What work a record measured, so that the same work is compared and only the same work.

Two things name the work, and a hash of the plugin's files only records where it came from:

- the **protocol version** a workload declares (``Workload.protocol_version``), bumped by its
  author when the measured work changes: the data, the model, the timed code path, the stop
  rule, what a figure means. Records of one workload and one protocol version are comparable,
  whatever else changed in the plugin's files (a claim's wording or threshold, a control, a
  docstring): claims are judged again by the code that reads them (harness.judging.verdicts.rejudge).
- the **work digest**: a hash of the work as run, the case's resolved params and the facts the
  workload states about them (``Workload.describe_work``: data generator and its parameters,
  model, stop rule). Two records of one protocol version whose digests differ are kept apart:
  the safety net under a protocol version that was not bumped when it should have been.

The **source hash** (10 hex digits of SHA-256 over the plugin package's files) stays in every
record as provenance. A **lock file** (``versions.lock`` beside a plugin package, e.g.
``plugins/versions.lock`` for the built-in ones) lists, per workload, every source hash its code
has had with the protocol version it ran: records that carry only a source hash (made before
workloads declared versions) are mapped on read, and ``harness lock --check`` (and a test) fails
when a plugin's code changed without its author deciding whether the work changed
(docs/plugins.md, "Versions").
"""
from __future__ import annotations

import functools
import hashlib
import importlib.metadata
import importlib.util
import inspect
import json
import pathlib
import sys
from dataclasses import dataclass, field
from typing import Any

SKIPPED_SUFFIXES = (".pyc", ".pyo", ".so.tmp")
LOCK_NAME = "versions.lock"
LOCK_SCHEMA = "hpml-harness/versions-lock-v1"


def source_files(cls: type) -> list[pathlib.Path]:
    """The files whose content is the workload's code: the whole folder of a package's
    ``__init__`` (the built-in plugins), else the module file alone."""
    module = sys.modules.get(cls.__module__)
    try:
        path = pathlib.Path(inspect.getfile(module if module is not None else cls)).resolve()
    except (TypeError, OSError):
        return []
    if path.name != "__init__.py":
        return [path]
    return sorted(p for p in path.parent.rglob("*") if p.is_file() and "__pycache__" not in p.parts
                  and not p.name.startswith(".") and not p.name.endswith(SKIPPED_SUFFIXES)
                  and p.name != LOCK_NAME)


def hash_files(files: list[tuple[str, bytes]]) -> str:
    """10 hex digits of SHA-256 over (relative name, content) pairs in the order given: the one
    definition of a source hash, shared by the live plugin and a lock rebuilt from git."""
    digest = hashlib.sha256()
    for name, data in files:
        digest.update(name.encode() + b"\0" + hashlib.sha256(data).digest())
    return digest.hexdigest()[:10]


@functools.lru_cache(maxsize=None)
def source_hash(cls: type) -> str:
    """The source hash of the workload class's plugin ('nosource' when it has no files)."""
    files = source_files(cls)
    if not files:
        return "nosource"
    base = files[0].parent if len(files) == 1 else min((f.parent for f in files), key=lambda d: len(d.parts))
    named = []
    for f in files:
        try:
            named.append((str(f.relative_to(base)), f.read_bytes()))
        except OSError:
            continue
    return hash_files(named)


def lock_path(cls: type) -> pathlib.Path | None:
    """Where the lock of the workload's plugin lives: ``versions.lock`` in the folder of the
    plugin's top-level package (the built-in plugins': plugins/versions.lock, harness_plugins'
    folder), or beside a lone top-level module: where :func:`installed_lock_files` finds it."""
    top = sys.modules.get(cls.__module__.split(".")[0])
    folders = list(getattr(top, "__path__", []) or [])
    if folders:
        return pathlib.Path(folders[0]).resolve() / LOCK_NAME
    files = source_files(cls)
    return files[0].parent / LOCK_NAME if files else None


def work_digest(params: dict[str, Any], facts: dict[str, Any]) -> str:
    """12 hex digits of SHA-256 over the canonical JSON of the resolved params and the facts."""
    text = json.dumps({"params": params, "facts": facts}, sort_keys=True, default=str, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def workload_version(workload: Any) -> tuple[str, str]:
    """(version, protocol_version): 'p2+3fa0c9d1e2' with a declared protocol_version 'p2', else
    the source hash alone. The version is provenance; comparability is :func:`comparable_version`."""
    declared = str(getattr(workload, "protocol_version", "") or "")
    digest = source_hash(type(workload))
    return (f"{declared}+{digest}" if declared else digest), declared


# ----------------------------------------------------------------------------- the lock file

@dataclass
class LockEntry:
    """One source hash a workload's code has had, the protocol version it ran, and why."""

    source_hash: str
    protocol_version: str
    commit: str = ""
    reason: str = ""


@dataclass
class WorkloadLock:
    protocol_version: str                   # the one the code declares now
    sources: list[LockEntry] = field(default_factory=list)

    def protocol_of(self, source_hash: str) -> str | None:
        return next((e.protocol_version for e in self.sources if e.source_hash == source_hash), None)


def read_lock(path: pathlib.Path) -> dict[str, WorkloadLock]:
    """The workloads of one lock file ({} when it does not exist); raises ValueError, naming the
    file, when it is not a lock."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"{path}: not a readable lock file ({exc})") from exc
    if not isinstance(data, dict) or data.get("schema") != LOCK_SCHEMA or not isinstance(data.get("workloads"), dict):
        raise ValueError(f"{path}: not a lock file of schema {LOCK_SCHEMA!r}")
    out = {}
    for name, entry in data["workloads"].items():
        try:
            out[name] = WorkloadLock(str(entry["protocol_version"]),
                                     [LockEntry(str(s["source_hash"]), str(s["protocol_version"]),
                                                str(s.get("commit", "")), str(s.get("reason", "")))
                                      for s in entry["sources"]])
        except (KeyError, TypeError) as exc:
            raise ValueError(f"{path}: workload {name!r} has a malformed entry ({exc})") from exc
    return out


def lock_text(locks: dict[str, WorkloadLock]) -> str:
    """The lock file's text: generated data, one stable form (sorted workloads, sources in the
    order they were locked), so that a diff shows exactly what was decided."""
    return json.dumps({"schema": LOCK_SCHEMA, "workloads": {
        name: {"protocol_version": lock.protocol_version,
               "sources": [{"source_hash": e.source_hash, "protocol_version": e.protocol_version,
                            "commit": e.commit, "reason": e.reason} for e in lock.sources]}
        for name, lock in sorted(locks.items())}}, indent=1, ensure_ascii=False) + "\n"


def installed_lock_files() -> list[pathlib.Path]:
    """The lock files of the installed plugin distributions, found without importing a plugin:
    ``versions.lock`` in each entry point's top-level package folder."""
    from harness.hookspecs import ENTRY_POINT_GROUP

    found: list[pathlib.Path] = []
    for ep in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
        top = ep.value.split(":")[0].split(".")[0]
        try:
            spec = importlib.util.find_spec(top)
        except (ImportError, ValueError):
            continue
        if spec is None:
            continue
        folders = list(spec.submodule_search_locations or []) or ([pathlib.Path(spec.origin).parent] if spec.origin else [])
        for folder in folders:
            path = pathlib.Path(folder).resolve() / LOCK_NAME
            if path.is_file() and path not in found:
                found.append(path)
    return found


@functools.lru_cache(maxsize=1)
def known_locks() -> dict[str, WorkloadLock]:
    """Every installed plugin's lock, merged (a broken lock file is skipped: records then fall
    back to their source hash, a false 'different', never a false 'same')."""
    merged: dict[str, WorkloadLock] = {}
    for path in installed_lock_files():
        try:
            merged.update(read_lock(path))
        except ValueError:
            continue
    return merged


def comparable_version(name: str, version: str, protocol_version: str) -> str:
    """The key that decides comparability of a record's work: its declared protocol version
    ('pv:3'); else the protocol version its source hash maps to in a lock ('pv:1'); else the
    source hash itself (a third-party plugin without a declared version: any edit is another
    version), '' when the record has neither."""
    if protocol_version:
        return f"pv:{protocol_version}"
    source = version.split("+")[-1] if version else ""
    lock = known_locks().get(name)
    mapped = lock.protocol_of(source) if lock is not None and source else None
    return f"pv:{mapped}" if mapped is not None else source


# ----------------------------------------------------------------------------- deciding

@dataclass
class LockState:
    """Where one registered workload stands against its lock."""

    workload: str
    protocol_version: str      # declared
    source_hash: str
    lock_file: pathlib.Path | None
    locked_as: str | None      # the protocol version its current hash is locked under, None if not locked

    @property
    def ok(self) -> bool:
        return not self.protocol_version or self.locked_as == self.protocol_version

    def problem(self) -> str:
        """'' when locked, else what is wrong and the command that decides it."""
        if self.ok:
            return ""
        if self.locked_as is not None:
            return (f"{self.workload}: declares protocol_version {self.protocol_version!r}, but its code "
                    f"{self.source_hash} was locked as {self.locked_as!r}; restore the declaration")
        return (f"{self.workload}: its code changed ({self.source_hash} is not in {self.lock_file}): if the "
                f"measured work changed (data, model, timed code, stop rule, what a figure means) bump "
                f"protocol_version and run `harness lock {self.workload} --reason WHY`; if not (a claim, a "
                f"control, a docstring) run `harness lock {self.workload} --same-work --reason WHY`")


def lock_state(workload: Any) -> LockState:
    cls = type(workload)
    path = lock_path(cls)
    declared = str(getattr(workload, "protocol_version", "") or "")
    digest = source_hash(cls)
    try:
        lock = read_lock(path).get(workload.name) if path is not None else None
    except ValueError:
        lock = None
    return LockState(workload.name, declared, digest, path, lock.protocol_of(digest) if lock else None)


def relock(workload: Any, same_work: bool, reason: str, commit: str = "") -> tuple[pathlib.Path, LockEntry]:
    """Add the workload's current source hash to its lock file under its declared protocol
    version, after checking the decision: ``same_work`` must be True exactly when the declared
    version is the one already locked. Raises ValueError naming what to fix."""
    from harness.output.atomic import write_atomic

    state = lock_state(workload)
    if not state.protocol_version:
        raise ValueError(f"{workload.name}: declares no protocol_version; set one (e.g. protocol_version = \"1\") "
                         "in its Workload class, then lock it")
    if state.lock_file is None:
        raise ValueError(f"{workload.name}: its plugin has no source files to lock")
    locks = read_lock(state.lock_file)
    current = locks.get(workload.name)
    if state.locked_as is not None:
        raise ValueError(f"{workload.name}: its code {state.source_hash} is already locked as protocol "
                         f"{state.locked_as!r}; nothing to decide")
    if current is not None and state.protocol_version in {e.protocol_version for e in current.sources} \
            and state.protocol_version != current.protocol_version:
        raise ValueError(f"{workload.name}: protocol_version {state.protocol_version!r} was used before (the lock "
                         f"is at {current.protocol_version!r}); a new protocol needs a new name")
    bumped = current is None or state.protocol_version != current.protocol_version
    if same_work and bumped:
        raise ValueError(f"{workload.name}: --same-work, but protocol_version {state.protocol_version!r} is not "
                         f"the locked {current.protocol_version if current else None!r}: a bumped version says "
                         "the work changed; drop --same-work or restore the version")
    if not same_work and not bumped:
        raise ValueError(f"{workload.name}: protocol_version is still {state.protocol_version!r}: if the work is "
                         "unchanged say --same-work; if it changed, bump protocol_version first")
    entry = LockEntry(state.source_hash, state.protocol_version, commit,
                      ("same work: " if same_work else "new protocol: ") + reason)
    lock = current or WorkloadLock(state.protocol_version)
    lock.protocol_version = state.protocol_version
    lock.sources.append(entry)
    locks[workload.name] = lock
    write_atomic(state.lock_file, lock_text(locks))
    known_locks.cache_clear()
    return state.lock_file, entry


def current_work_version(workload: Any) -> str:
    """The comparability key of the records this code makes now (as Record.work_version reads them)."""
    version, declared = workload_version(workload)
    return comparable_version(workload.name, version, declared)


CHECKSUM_EDGE_BYTES = 8 << 20


def file_facts(params: dict[str, Any]) -> dict[str, Any]:
    """{param: "<bytes> bytes, sha256 <16 hex>"} for every string param that names an existing
    file: the data a case read, identified by content, not by its path on one machine."""
    out: dict[str, Any] = {}
    for name, value in sorted(params.items()):
        if not isinstance(value, str) or not value or "\0" in value or len(value) > 4096:
            continue
        path = pathlib.Path(value)
        try:
            if not path.is_file():
                continue
            size = path.stat().st_size
            digest = hashlib.sha256()
            with path.open("rb") as f:
                digest.update(f.read(CHECKSUM_EDGE_BYTES))
                if size > 2 * CHECKSUM_EDGE_BYTES:
                    f.seek(size - CHECKSUM_EDGE_BYTES)
                    digest.update(f.read(CHECKSUM_EDGE_BYTES))
        except (OSError, ValueError):
            continue
        out[name] = f"{size} bytes, sha256 {digest.hexdigest()[:16]}"
    return out


def work_of(workload: Any, params: dict[str, Any]) -> dict[str, Any]:
    """The record's ``workload.work``: {"digest", "facts"}; a describe_work that raises is
    recorded as such (its digest then differs from a working one: a false 'different')."""
    from harness.plugin_guard import describe, guarded

    facts, exc = guarded(lambda: workload.describe_work(params))
    if exc is not None or not isinstance(facts, dict):
        facts = {"describe_work_error": describe(exc) if exc is not None else f"returned {type(facts).__name__}"}
    facts = json.loads(json.dumps(facts, default=str))
    from harness.params import added_later_defaults

    # a param added later, at the default that does the earlier work, names no new work
    later = added_later_defaults(getattr(workload, "params", {}) or {})
    digested = {k: v for k, v in params.items() if not (k in later and v == later[k])}
    return {"digest": work_digest(digested, facts), "facts": facts}

