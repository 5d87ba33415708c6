"""Whole files or none: write next to the target, then rename over it."""
from __future__ import annotations

import os
import pathlib
import tempfile
from collections.abc import Callable
from typing import Any


def write_atomic(path: pathlib.Path, data: bytes | str | Callable[[Any], None]) -> None:
    """Write ``data`` (bytes, text, or a function writing to the open binary file) to ``path`` so
    that a failure or a kill leaves the previous file (or none), never half a file."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "wb") as f:
            if callable(data):
                data(f)
            else:
                f.write(data.encode() if isinstance(data, str) else data)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise
