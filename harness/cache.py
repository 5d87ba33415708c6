"""The user's cache folder for what the harness computes once and reuses (py-cpuinfo's
answer, the compiled PMPI hook)."""
from __future__ import annotations

import os
import pathlib


def cache_dir() -> pathlib.Path:
    """``$XDG_CACHE_HOME/hpml-harness`` (default ``~/.cache/hpml-harness``); not created here."""
    base = os.environ.get("XDG_CACHE_HOME") or str(pathlib.Path.home() / ".cache")
    return pathlib.Path(base) / "hpml-harness"
