"""Whole files or none: write next to the target, then rename over it."""
from __future__ import annotations

import os
import pathlib
import tempfile
from collections.abc import Callable
from typing import Any

from harness.errors import UsageError


def write_atomic(path: pathlib.Path, data: bytes | str | Callable[[Any], None]) -> None:
    """Write ``data`` (bytes, text, or a function writing to the open binary file) to ``path`` so
    that a failure or a kill leaves the previous file (or none), never half a file. A file-system
    fault (full, read-only, a name too long) is a UsageError naming ``path``."""
    path = pathlib.Path(path)
    try:
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name[:40]}.")
    except OSError as exc:
        raise UsageError(f"{path}: cannot write there ({exc.strerror}); choose a writable folder") from None
    try:
        os.fchmod(fd, _mode_for(path))
        with os.fdopen(fd, "wb") as f:
            if callable(data):
                data(f)
            else:
                f.write(data.encode("utf-8", "backslashreplace") if isinstance(data, str) else data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except OSError as exc:
        _remove(tmp)
        raise UsageError(f"{path}: could not write it ({exc.strerror}); the previous file (if any) is "
                         "as it was: free space or choose another path") from None
    except BaseException:
        _remove(tmp)
        raise


def _mode_for(path: pathlib.Path) -> int:
    """The replaced file's permissions, or a new file's (0o666 less the umask), not mkstemp's 0o600."""
    try:
        return os.stat(path).st_mode & 0o7777
    except OSError:
        mask = os.umask(0o022)
        os.umask(mask)
        return 0o666 & ~mask


def _remove(tmp: str) -> None:
    try:
        os.unlink(tmp)
    except OSError:
        pass
