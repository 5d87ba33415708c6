"""The record JSON Schema shipped in the package, and validation against it."""
from __future__ import annotations

import functools
import json
import pathlib
from typing import Any

import jsonschema

SCHEMA_PATH = pathlib.Path(__file__).with_name("record.schema.json")
SCHEMA_VERSION = 1


@functools.lru_cache(maxsize=1)
def _validator() -> jsonschema.Draft202012Validator:
    schema = json.loads(SCHEMA_PATH.read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def schema_errors(record: Any) -> list[str]:
    """Every way ``record`` breaks the schema, as 'path: message' strings (empty when valid)."""
    errors = sorted(_validator().iter_errors(record), key=lambda e: list(e.absolute_path))
    return [f"{'/'.join(map(str, e.absolute_path)) or '(top)'}: {e.message}" for e in errors]


def validate(record: Any) -> None:
    """Raise ValueError listing the problems when ``record`` does not match the schema."""
    errors = schema_errors(record)
    if errors:
        raise ValueError("record does not match the schema: " + "; ".join(errors[:5]))
