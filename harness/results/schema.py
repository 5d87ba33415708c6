"""The record JSON Schemas shipped in the package (version 3, and versions 1 and 2 for old files)."""
from __future__ import annotations

import functools
import json
import pathlib
from typing import Any

import jsonschema

from harness.results.record import SCHEMA_VERSION

SCHEMA_PATHS = {3: pathlib.Path(__file__).with_name("record.schema.json"),
                2: pathlib.Path(__file__).with_name("record-v2.schema.json"),
                1: pathlib.Path(__file__).with_name("record-v1.schema.json")}
SCHEMA_PATH = SCHEMA_PATHS[SCHEMA_VERSION]


@functools.lru_cache(maxsize=3)
def _validator(version: int) -> jsonschema.Draft202012Validator:
    schema = json.loads(SCHEMA_PATHS[version].read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def schema_errors(record: Any, version: int = SCHEMA_VERSION) -> list[str]:
    """Every way ``record`` breaks the schema of ``version``, as 'path: message' strings (empty when valid)."""
    errors = sorted(_validator(version).iter_errors(record), key=lambda e: list(e.absolute_path))
    return [f"{'/'.join(map(str, e.absolute_path)) or '(top)'}: {e.message}" for e in errors]


def validate(record: Any) -> None:
    """Raise ValueError listing the problems when ``record`` (JSON form) does not match the current version."""
    errors = schema_errors(record)
    if errors:
        raise ValueError("record does not match the schema: " + "; ".join(errors[:5]))
