"""Result records: the versioned JSON Schema, building records, the JSONL store, DataFrames.

``load``/``load_frame`` (pandas) and ``load_records``/``read_records``/``results_files`` are
imported on first use, so reading records never pays for pandas."""
from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {"load": "harness.results.frame", "load_frame": "harness.results.frame",
            "load_records": "harness.results.store", "read_records": "harness.results.store",
            "results_files": "harness.results.store"}
__all__ = list(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'harness.results' has no attribute {name!r}")
    return getattr(importlib.import_module(_EXPORTS[name]), name)
