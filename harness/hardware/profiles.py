"""Hardware profiles (one node type per TOML file) and matching this machine against them.

A profile's ``[match]`` table says how to recognise the node: ``arch``, ``microarch`` (archspec's
name, e.g. ``skylake_avx512``, ``thunderx2``, ``power9le``), a ``model_regex`` searched in the CPU
model string, ``flags`` that must all be present, ``gpu_regex``.

With ``microarch``, a host matches when archspec names the same microarchitecture or one that
descends from it (a ``cascadelake`` host against a ``skylake_avx512`` profile), and the record says
how: ``model`` (microarchitecture and the reported model name both match), ``microarchitecture``
(same core, another SKU) or ``family`` (a descendant; ``distance`` generations apart). The model
regex alone decides only where archspec cannot name the host (not installed, or a VM that hides
features so only a generic level like ``x86_64_v4`` is known). The most specific match wins; no
match is recorded as unmatched, not an error.
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

    def judge(self, fp: dict[str, Any]) -> tuple[int, str, int] | None:
        """(score: how many criteria this machine meets, how it matched, ancestry distance), or
        None when a criterion fails (or none are given)."""
        m, score, by, distance = self.match, 0, "", 0
        cpu = fp.get("cpu", {})
        if "arch" in m:
            if fp.get("arch") != m["arch"]:
                return None
            score += 1
        model_hit = "model_regex" in m and bool(re.search(m["model_regex"], cpu.get("model", ""), re.I))
        uarch = cpu.get("microarch") or {}
        if "microarch" in m and uarch.get("name") and not uarch.get("generic"):
            lineage = [uarch["name"], *uarch.get("ancestors", [])]
            if m["microarch"] not in lineage:
                return None
            distance = lineage.index(m["microarch"])
            if distance:
                score, by = score + 1, "family"
            elif model_hit and cpu.get("model_reported", True):
                score, by = score + 4, "model"
            else:
                score, by = score + 3, "microarchitecture"
        elif "model_regex" in m:
            if not model_hit:
                return None
            score, by = score + 2, "model name"
        elif "microarch" in m:    # archspec cannot name this host and there is no regex to fall back on
            return None
        if "flags" in m:
            if not set(m["flags"]) <= set(fp.get("cpu", {}).get("flags", [])):
                return None
            score += 1
        if "gpu_regex" in m:
            if not any(re.search(m["gpu_regex"], g.get("name", ""), re.I) for g in fp.get("gpus", [])):
                return None
            score, by = score + 2, by or "gpu"
        return (score, by or "arch", distance) if score else None


def load_profiles(dirs: list[pathlib.Path]) -> tuple[dict[str, Profile], list[Problem]]:
    """Read every ``*.toml`` in ``dirs``; a malformed file is a Problem, the rest still load."""
    profiles: dict[str, Profile] = {}
    problems: list[Problem] = []
    for d in dirs:
        for path in sorted(d.glob("*.toml")):
            if not path.is_file():      # a FIFO or a device would block the read: skipped, said
                problems.append(Problem(str(path), "not a regular file: skipped (a profile is a TOML file)"))
                continue
            try:
                data = tomllib.loads(path.read_text())
                errors = profile_errors(data)
                if errors:
                    raise ValueError("does not match the profile schema: " + "; ".join(errors[:3]))
                for key in ("model_regex", "gpu_regex"):     # compiled now: a bad one is this file's problem
                    if key in data.get("match", {}):
                        try:
                            re.compile(data["match"][key])
                        except (re.error, TypeError) as exc:
                            raise ValueError(f"match.{key} {data['match'][key]!r} is not a regular "
                                             f"expression ({exc}); fix or escape it") from None
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
    judged = [(j, p) for p in profiles.values() if (j := p.judge(fp)) is not None]
    uarch = (fp.get("cpu", {}).get("microarch") or {}).get("name")
    described = f"{fp.get('cpu', {}).get('model', '?')!r} ({fp.get('arch')}{', ' + uarch if uarch else ''})"
    if not judged:
        return {"name": None, "path": None, "score": 0, "match_by": None,
                "reason": f"no profile matches {described}"}
    (score, by, distance), best = max(judged, key=lambda jp: (jp[0][0], -jp[0][2], jp[1].name))
    reason = ""
    if by == "family":
        reason = (f"matched by family: this {uarch} descends from the profile's {best.match['microarch']} "
                  f"({distance} generation(s)); its peaks are the profile's node, not this SKU")
    elif by == "microarchitecture":
        reason = (f"matched by microarchitecture ({uarch}), not by model: {described} is another SKU "
                  "than the profile's node")
    return {"name": best.name, "path": str(best.path), "score": score, "match_by": by, "distance": distance,
            "reason": reason}


def hardware_profiles(dirs: list[pathlib.Path] | None = None) -> dict[str, dict[str, Any]]:
    """Every registered hardware profile's data by name (the public API for plugins).

    ``dirs``: the folders to read (in a worker: ``ctx.profile_dirs``); None: every folder the
    installed plugins register (in the parent, e.g. in ``check_params``)."""
    if dirs is None:
        from harness.registry import build_registry
        dirs = build_registry().profile_dirs
    return {name: p.data for name, p in load_profiles(list(dirs))[0].items()}
