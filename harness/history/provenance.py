"""What a record says about the conditions it ran under, flattened to named values, and what of
it differs between two runs: the explanation of a change point.

Only what can change a timing is kept: the verified library, package and MPI versions, the numerics
environment variables, the clock policy, the placement, the harness commit and the hardware. What
differs on every run (times, paths of work folders, load averages) is left out, or every step would
be "explained" by it.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from harness.results.record import Record

ABSENT = "unset"


def _text(value: Any) -> str:
    if value is None or value == "" or value == [] or value == {}:
        return ABSENT
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True)


def provenance(record: Record) -> dict[str, str]:
    """The record's conditions as ``{name: value}`` (absent ones omitted), names grouped by kind:
    ``library``, ``package:NAME``, ``env:VAR``, ``tuning:...``, ``mpi``, ``launch:...``,
    ``commit``, ``hardware:...``."""
    out: dict[str, Any] = {}
    b = record.backend
    out["library"] = b.library or (b.verified and b.requested) or None
    out["library verified"] = None if b.verified is None else ("yes" if b.verified else "no")
    sw = record.software or {}
    out["python"] = sw.get("python")
    for name, version in sorted((sw.get("packages") or {}).items()):
        out[f"package:{name}"] = version
    out["mpi"] = sw.get("mpi_library")
    git = sw.get("git") or {}
    if isinstance(git, dict) and git.get("commit"):
        out["commit"] = str(git["commit"])[:12] + ("+uncommitted changes" if git.get("dirty") else "")
    # the plugin's source hash: an edit that kept the protocol version (harness.work_identity) is
    # in one series, and a step there may be explained by it
    out["plugin source"] = record.workload.version.split("+")[-1] or None
    env = dict(record.environment or {})
    env.update(b.environment or {})        # what the harness set for the case wins, as in the child
    for var, value in sorted(env.items()):
        out[f"env:{var}"] = value
    hw = record.hardware or {}
    tuning = hw.get("tuning") or {}
    for key in ("governors", "driver", "boost", "smt", "isolated"):
        out[f"tuning:{key}"] = tuning.get(key)
    cpu = hw.get("cpu") or {}
    out["hardware:cpu"] = cpu.get("model")
    out["hardware:microarchitecture"] = (cpu.get("microarch") or {}).get("name")
    out["hardware:usable cpus"] = cpu.get("usable_cpus")
    out["hardware:memory bytes"] = hw.get("memory_bytes")
    out["hardware:gpus"] = [g.get("name") for g in hw.get("gpus") or [] if isinstance(g, dict)] or None
    out["hardware:os"] = hw.get("os")
    launch = record.launch
    out["launch:launcher"] = launch.launcher
    out["launch:oversubscribed"] = launch.oversubscribed or None
    res = record.resources or {}
    out["launch:hosts"] = len(res.get("hosts") or []) or None
    out["launch:allreduce profiler"] = record.protocol.allreduce_profiler or None
    return {k: _text(v) for k, v in out.items() if _text(v) != ABSENT}


@dataclass
class Change:
    """One condition that differs between the run before a step and the run after it."""

    name: str
    before: str
    after: str
    consistent: bool    # every run of the segment before has ``before``, every run after has ``after``

    def text(self) -> str:
        return f"{self.name} {self.before} -> {self.after}"


def changes(before: list[dict[str, str]], after: list[dict[str, str]]) -> list[Change]:
    """What differs between the last run of ``before`` and the first of ``after`` (each a list of
    :func:`provenance` dicts, oldest first); changes that hold for the whole of both segments
    first, as they are the likelier cause."""
    last, first = before[-1], after[0]
    found = []
    for name in sorted(set(last) | set(first)):
        old, new = last.get(name, ABSENT), first.get(name, ABSENT)
        if old == new:
            continue
        consistent = (all(p.get(name, ABSENT) == old for p in before)
                      and all(p.get(name, ABSENT) == new for p in after))
        found.append(Change(name, old, new, consistent))
    found.sort(key=lambda c: (not c.consistent, c.name))
    return found
