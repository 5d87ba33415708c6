"""A workload's version: what work a record measured, so that only the same work is compared.

The version is the plugin's declared ``protocol_version`` (a name its author bumps when the
protocol changes on purpose, like asv's benchmark ``version``) followed by a hash of the plugin's
source files: every file of the package that defines the workload class (a plugin module alone,
when it is not in a package), ``__pycache__`` and compiled files left out. Any change to the code
that builds the data, the model or the claims changes the version, whether or not the author
remembered to bump it; a change elsewhere in the plugin's package does too (a false "different",
never a false "same").
"""
from __future__ import annotations

import functools
import hashlib
import inspect
import pathlib
import sys
from typing import Any

SKIPPED_SUFFIXES = (".pyc", ".pyo", ".so.tmp")


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
                  and not p.name.startswith(".") and not p.name.endswith(SKIPPED_SUFFIXES))


@functools.lru_cache(maxsize=None)
def source_hash(cls: type) -> str:
    """10 hex digits of SHA-256 over the source files' names (relative) and contents."""
    files = source_files(cls)
    if not files:
        return "nosource"
    base = files[0].parent if len(files) == 1 else min((f.parent for f in files), key=lambda d: len(d.parts))
    digest = hashlib.sha256()
    for f in files:
        try:
            data = f.read_bytes()
        except OSError:
            continue
        digest.update(str(f.relative_to(base)).encode() + b"\0" + hashlib.sha256(data).digest())
    return digest.hexdigest()[:10]


def workload_version(workload: Any) -> tuple[str, str]:
    """(version, protocol_version): 'p2+3fa0c9d1e2' with a declared protocol_version 'p2', else
    the source hash alone."""
    declared = str(getattr(workload, "protocol_version", "") or "")
    digest = source_hash(type(workload))
    return (f"{declared}+{digest}" if declared else digest), declared
