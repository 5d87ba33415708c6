"""The record JSON Schemas shipped in the package (version 4, and versions 1 to 3 for old files)."""
from __future__ import annotations

import functools
import json
import pathlib
from typing import Any

import fastjsonschema
import jsonschema

from harness.results.record import SCHEMA_VERSION

SCHEMA_PATHS = {4: pathlib.Path(__file__).with_name("record.schema.json"),
                3: pathlib.Path(__file__).with_name("record-v3.schema.json"),
                2: pathlib.Path(__file__).with_name("record-v2.schema.json"),
                1: pathlib.Path(__file__).with_name("record-v1.schema.json")}
SCHEMA_PATH = SCHEMA_PATHS[SCHEMA_VERSION]


@functools.lru_cache(maxsize=4)
def _validator(version: int) -> jsonschema.Draft202012Validator:
    schema = json.loads(SCHEMA_PATHS[version].read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


@functools.lru_cache(maxsize=4)
def _fast(version: int) -> Any:
    """The schema compiled to Python code (fastjsonschema): about 30 times faster than the
    general validator, which readers would otherwise spend 4 ms per record in. The schemas use
    only keywords that draft 7 reads the same way; formats are not checked, as by jsonschema."""
    schema = dict(json.loads(SCHEMA_PATHS[version].read_text()), **{"$schema": "http://json-schema.org/draft-07/schema#"})
    return fastjsonschema.compile(schema, use_formats=False)


def is_valid(record: Any, version: int = SCHEMA_VERSION) -> bool:
    """True when ``record`` matches the schema of ``version`` (the fast path of every reader)."""
    try:
        _fast(version)(record)
    except fastjsonschema.JsonSchemaException:
        return False
    return True


def schema_errors(record: Any, version: int = SCHEMA_VERSION) -> list[str]:
    """Every way ``record`` breaks the schema of ``version``, as 'path: message' strings (empty when valid)."""
    if is_valid(record, version):
        return []
    errors = sorted(_validator(version).iter_errors(record), key=lambda e: list(e.absolute_path))
    return [f"{'/'.join(map(str, e.absolute_path)) or '(top)'}: {e.message}" for e in errors]


def validate(record: Any) -> None:
    """Raise ValueError listing the problems when ``record`` (JSON form) does not match the current version."""
    errors = schema_errors(record)
    if errors:
        raise ValueError("record does not match the schema: " + "; ".join(errors[:5]))
