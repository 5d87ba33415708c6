"""Which microarchitecture a CPU is, named as archspec (Spack's library) names it, from the text
of a ``/proc/cpuinfo`` rather than from the running host, so that fixtures of other machines
(ThunderX2, Power9, A64FX, Grace, ...) go through exactly the code a real node does.

archspec's own ``host()`` reads this machine's ``/proc/cpuinfo`` and ``platform.machine()``; the
selection here follows its rules (x86: vendor and features; aarch64: vendor, features and CPU
part; Power: generation) with the architecture passed in, and returns a plain dict for records.
It also says when the interpreter's architecture and the CPU description disagree: under
qemu-user an emulated ppc64le process reads the x86 host's ``/proc/cpuinfo``.
"""
from __future__ import annotations

import re
from typing import Any

AARCH64, PPC64LE, X86_64 = "aarch64", "ppc64le", "x86_64"


def cpuinfo_fields(text: str) -> dict[str, str]:
    """The first processor's 'key : value' fields (keys lower-cased), plus machine-wide fields
    that some architectures print after the processors (Power's 'platform', 'model', 'machine')."""
    first: dict[str, str] = {}
    rest: dict[str, str] = {}
    block = first
    for line in text.splitlines():
        if not line.strip():
            if first:
                block = rest
            continue
        key, sep, value = line.partition(":")
        if sep:
            block.setdefault(key.strip().lower(), value.strip())
    for key in ("platform", "model", "machine", "timebase"):
        if key in rest and key not in first:
            first[key] = rest[key]
    return first


def cpuinfo_arch(fields: dict[str, str]) -> str | None:
    """The architecture a cpuinfo describes (None when it does not say)."""
    if "cpu implementer" in fields or "cpu part" in fields:
        return AARCH64
    if re.search(r"POWER\d", fields.get("cpu", "")) or "pvr" in fields.get("revision", ""):
        return PPC64LE
    if "vendor_id" in fields or "flags" in fields:
        return X86_64
    return None


def features(fields: dict[str, str]) -> set[str]:
    """ISA features as the kernel lists them: x86 'flags', Arm 'Features'; Power lists none,
    only 'altivec supported' in its cpu line (which archspec does not need)."""
    words = set((fields.get("flags") or fields.get("features") or "").split())
    if "ssse3" in words:   # implies sse3, which Linux lists as 'pni' (archspec adds it the same way)
        words.add("sse3")
    if "altivec" in fields.get("cpu", "").lower():
        words.add("altivec")
    return words


def emulation(fields: dict[str, str], described: str | None, interpreter_arch: str) -> dict[str, Any]:
    """{"emulated": bool, "evidence": str}: the process runs as ``interpreter_arch`` but the CPU
    it reads about (``fields``, which describe ``described``: see cpuinfo_arch) is another
    architecture (qemu-user and other binary translators)."""
    if described and interpreter_arch and described != _canonical(interpreter_arch):
        return {"emulated": True,
                "evidence": f"this process runs as {interpreter_arch} but /proc/cpuinfo describes an "
                            f"{described} CPU ({fields.get('model name') or fields.get('cpu') or '?'}): "
                            "binary translation (e.g. qemu-user); timings are not this architecture's"}
    return {"emulated": False, "evidence": ""}


def _canonical(arch: str) -> str:
    return {"arm64": AARCH64, "ppc64el": PPC64LE, "amd64": X86_64}.get(arch.lower(), arch.lower())


def microarchitecture(fields: dict[str, str], arch: str) -> dict[str, Any]:
    """archspec's name, vendor, family, generation, features and ancestors of the CPU that
    ``fields`` describe, or {"name": None, "reason": ...} when archspec cannot say."""
    try:
        import archspec
        from archspec.cpu import TARGETS
        from archspec.cpu.schema import TARGETS_JSON
    except ImportError:
        return {"name": None, "reason": "archspec is not installed (pip install archspec)"}
    arch = _canonical(arch)
    if arch not in TARGETS:
        return {"name": None, "reason": f"archspec knows no architecture {arch!r}"}
    root = TARGETS[arch]
    found = features(fields)
    vendor = fields.get("vendor_id", "generic")
    cpu_part = ""
    generation = 0
    if arch == AARCH64:
        code = fields.get("cpu implementer", "")
        vendor = TARGETS_JSON["conversions"]["arm_vendors"].get(code, code)
        cpu_part = fields.get("cpu part", "")
    elif arch == PPC64LE:
        m = re.search(r"POWER(\d+)", fields.get("cpu", ""))
        generation = int(m.group(1)) if m else 0

    def compatible(t: Any) -> bool:
        in_tree = t == root or root in t.ancestors
        if arch == PPC64LE:
            return in_tree and t.generation <= generation
        if arch == AARCH64:
            if t.vendor == "generic" and t.name != AARCH64:
                return False
            return t.family == root and t.vendor in (vendor, "generic") and t.features <= found
        return in_tree and t.vendor in (vendor, "generic") and t.features <= found

    candidates = [t for t in TARGETS.values() if compatible(t)] or [root]

    def depth(t: Any) -> tuple[int, int]:
        return len(t.ancestors), len(t.features)

    best_generic = max((c for c in candidates if c.vendor == "generic"), key=depth, default=root)
    if cpu_part and any(c.cpu_part == cpu_part for c in candidates):
        candidates = [c for c in candidates if c.cpu_part == cpu_part]
    specific = [c for c in candidates if c > best_generic]
    chosen = max(specific, key=depth) if specific else best_generic
    return {
        "name": chosen.name, "vendor": chosen.vendor, "family": chosen.family.name,
        "generation": chosen.generation, "features": sorted(chosen.features),
        "ancestors": [a.name for a in chosen.ancestors], "generic": chosen.vendor == "generic",
        "source": f"archspec {getattr(archspec, '__version__', '?')}",
    }
