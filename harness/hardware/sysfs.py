"""Reading sysfs and /proc: a missing or unreadable file is None, never an error (VMs and
containers hide much of it)."""
from __future__ import annotations

import pathlib

SYSFS_CPU = pathlib.Path("/sys/devices/system/cpu")


def read_value(path: pathlib.Path) -> str | None:
    try:
        return path.read_text().strip()
    except OSError:
        return None
