"""Hardware profiles (one node type per TOML file) and matching this machine against them.

A profile's ``[match]`` table says how to recognise the node: ``arch``, a ``model_regex``
searched in the CPU model string, ``flags`` that must all be present, ``gpu_regex``.
The most specific matching profile wins; no match is recorded as unmatched, not an error.
"""
from __future__ import annotations

import functools
import json
import pathlib
import re
import tomllib
from dataclasses import dataclass, field
from typing import Any

from harness.registry import Problem

SCHEMA_PATH = pathlib.Path(__file__).with_name("profile.schema.json")


@functools.lru_cache(maxsize=1)
def _validator() -> Any:
    import jsonschema
    return jsonschema.Draft202012Validator(json.loads(SCHEMA_PATH.read_text()))


def profile_errors(data: dict[str, Any]) -> list[str]:
    """Ways a profile breaks the profile schema, as 'path: message' strings."""
    return [f"{'/'.join(map(str, e.absolute_path)) or '(top)'}: {e.message}"
            for e in sorted(_validator().iter_errors(data), key=lambda e: list(e.absolute_path))]


@dataclass(frozen=True)
class Profile:
    name: str
    path: pathlib.Path
    description: str = ""
    match: dict[str, Any] = field(default_factory=dict)
    data: dict[str, Any] = field(default_factory=dict)

    def score(self, fp: dict[str, Any]) -> int | None:
        """How many criteria this machine meets, or None when one fails (or none are given)."""
        m, score = self.match, 0
        if "arch" in m:
            if fp.get("arch") != m["arch"]:
                return None
            score += 1
        if "model_regex" in m:
            if not re.search(m["model_regex"], fp.get("cpu", {}).get("model", ""), re.I):
                return None
            score += 2
        if "flags" in m:
            if not set(m["flags"]) <= set(fp.get("cpu", {}).get("flags", [])):
                return None
            score += 1
        if "gpu_regex" in m:
            if not any(re.search(m["gpu_regex"], g.get("name", ""), re.I) for g in fp.get("gpus", [])):
                return None
            score += 2
        return score or None


def load_profiles(dirs: list[pathlib.Path]) -> tuple[dict[str, Profile], list[Problem]]:
    """Read every ``*.toml`` in ``dirs``; a malformed file is a Problem, the rest still load."""
    profiles: dict[str, Profile] = {}
    problems: list[Problem] = []
    for d in dirs:
        for path in sorted(d.glob("*.toml")):
            try:
                data = tomllib.loads(path.read_text())
                errors = profile_errors(data)
                if errors:
                    raise ValueError("does not match the profile schema: " + "; ".join(errors[:3]))
                name = data["name"]
                match = data["match"]
            except (OSError, ValueError) as exc:
                problems.append(Problem(str(path), f"cannot read profile: {exc}"))
                continue
            if name in profiles:
                problems.append(Problem(str(path), f"duplicate profile {name!r} (also {profiles[name].path})"))
                continue
            profiles[name] = Profile(name, path, data.get("description", ""), match, data)
    return profiles, problems


def match_profile(fp: dict[str, Any], profiles: dict[str, Profile]) -> dict[str, Any]:
    """The best-matching profile as a record fragment: {"name", "path", "score"} or unmatched."""
    scored = [(p.score(fp), p) for p in profiles.values()]
    scored = [(s, p) for s, p in scored if s is not None]
    if not scored:
        return {"name": None, "path": None, "score": 0,
                "reason": f"no profile matches {fp.get('cpu', {}).get('model', '?')!r} ({fp.get('arch')})"}
    s, best = max(scored, key=lambda sp: (sp[0], sp[1].name))
    return {"name": best.name, "path": str(best.path), "score": s, "reason": ""}


def hardware_profiles(dirs: list[pathlib.Path] | None = None) -> dict[str, dict[str, Any]]:
    """Every registered hardware profile's data by name (the public API for plugins).

    ``dirs``: the folders to read (in a worker: ``ctx.profile_dirs``); None: every folder the
    installed plugins register (in the parent, e.g. in ``check_params``)."""
    if dirs is None:
        from harness.registry import build_registry
        dirs = build_registry().profile_dirs
    return {name: p.data for name, p in load_profiles(list(dirs))[0].items()}
