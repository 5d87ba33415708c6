"""Which machine ran: a stable key from the fingerprint's facts and a label that says what it is.

A machine is never its hostname or the hardware profile it resembles. Its **key** is a hash of
the facts that make two runs comparable: architecture, vendor, CPU model string, archspec
microarchitecture, sockets and usable CPUs, memory (GiB rounded up to 2 significant digits, so a
kernel's few reserved MiB do not split a machine), GPU models and count, virtualised or not, emulated or
not. Two VMs with one hidden CPU string but other core counts are two machines; one machine
seen from two hostnames is one.

Its **label** reads as what the machine is: "Intel Xeon (icelake+AMX), 2 vCPU, VM",
"AMD EPYC (zen4), 2 vCPU, VM", "Intel Xeon (icelake+AMX), 16 CPUs + 1x NVIDIA H200". A user's
``--machine-name`` is shown instead of the label but never enters the key. A profile's name
is not part of either: :func:`profile_relation` says how the machine relates to one.
"""
from __future__ import annotations

import hashlib
import json
import math
import pathlib
import re
from typing import Any

from harness.hardware.sysfs import read_value

# Families whose archspec name a VM can hide (it reports a generic level such as x86_64_v4):
# AMD's CPUID family and AVX-512 say the core generation (AMD's Processor Programming Reference
# per family: 17h Zen/Zen 2, 19h Zen 3/Zen 4 (AVX-512 from Zen 4), 1Ah Zen 5).
AMD_FAMILIES = {23: "zen2", 25: "zen3", 26: "zen5"}
AMX_FLAG = "amx_tile"
UNKNOWN_CORE = "unknown core"
# archspec names from Sapphire Rapids on have AMX in their feature set; older names with the AMX
# flag mean a VM that hides what archspec needs (the KVM guest said "icelake").
AMX_NAMES = {"sapphirerapids", "emeraldrapids", "graniterapids", "diamondrapids"}


def virtualisation(root: pathlib.Path = pathlib.Path("/"), cpu_flags: str | None = None) -> dict[str, Any]:
    """{"virtualised": True/False/None, "evidence": text}: the CPUID hypervisor bit (x86 lists
    it as the 'hypervisor' flag), /sys/hypervisor/type (Xen, some Arm/Power guests), or a DMI
    vendor that names a hypervisor. None when nothing can be read (not a claim of bare metal)."""
    if cpu_flags is None:
        try:
            text = (root / "proc" / "cpuinfo").read_text(errors="replace")
        except OSError:
            text = ""
        m = re.search(r"^(flags|features)\s*:(.*)$", text, re.M | re.I)
        cpu_flags = m.group(2) if m else ""
    if "hypervisor" in cpu_flags.split():
        return {"virtualised": True, "evidence": "CPUID hypervisor bit (cpuinfo flag 'hypervisor')"}
    kind = read_value(root / "sys" / "hypervisor" / "type")
    if kind:
        return {"virtualised": True, "evidence": f"/sys/hypervisor/type says {kind}"}
    vendor = " ".join(filter(None, (read_value(root / "sys" / "class" / "dmi" / "id" / n)
                                    for n in ("sys_vendor", "product_name"))))
    if re.search(r"QEMU|KVM|VMware|VirtualBox|Xen|Microsoft Corporation Virtual|Amazon EC2|Google Compute", vendor):
        return {"virtualised": True, "evidence": f"DMI names a hypervisor: {vendor}"}
    if cpu_flags or vendor:
        return {"virtualised": False, "evidence": "no hypervisor bit, no /sys/hypervisor, DMI names no hypervisor"}
    return {"virtualised": None, "evidence": "nothing readable says"}


def core_name(cpu: dict[str, Any]) -> tuple[str, str]:
    """(the core's name, how it was known): archspec's name; where a VM leaves archspec a generic
    level, AMD's CPUID family with AVX-512; '+AMX' where the flags show AMX that the name lacks."""
    uarch = cpu.get("microarch") or {}
    name, source = uarch.get("name") or "", "archspec"
    flags = set(cpu.get("flags") or [])
    family = (cpu.get("cpuid") or {}).get("family")
    if (not name or uarch.get("generic")) and cpu.get("vendor") == "AuthenticAMD" and family in AMD_FAMILIES:
        name = AMD_FAMILIES[family]
        if family == 25 and "avx512f" in flags:
            name = "zen4"
        source = f"CPUID family {family}{' with AVX-512' if 'avx512f' in flags else ''} (archspec: {uarch.get('name')})"
    if AMX_FLAG in flags and name and name not in AMX_NAMES:
        name += "+AMX"
    return name or UNKNOWN_CORE, source


def short_model(model: str) -> str:
    """'Intel(R) Xeon(R) Platinum 8160 CPU @ 2.10GHz' -> 'Intel Xeon Platinum 8160'."""
    text = re.sub(r"\((R|TM|tm|r)\)", "", model or "?")
    text = re.sub(r"\s+(CPU\s*)?@.*$", "", text)
    text = re.sub(r"\b(Processor|CPU)\b", "", text)
    text = re.sub(r"\b\d+-Core\b", "", text)
    return re.sub(r"\s+", " ", text).strip() or "?"


def round_gib(memory_bytes: Any) -> float | None:
    """Memory in GiB rounded up to 2 significant digits (23.49 and 23.54 -> 24, 125.8 -> 130):
    the kernel reports a little less than the nominal size, by an amount that varies with its
    version, and rounding up keeps one machine on one side of the boundary."""
    if not isinstance(memory_bytes, (int, float)) or memory_bytes <= 0:
        return None
    gib = memory_bytes / 2**30
    step = 10.0 ** (math.floor(math.log10(gib)) - 1)
    return float(f"{math.ceil(round(gib / step, 6)) * step:.6g}")


def facts(hardware: dict[str, Any]) -> dict[str, Any]:
    """The facts the key is made of, from a record's hardware section (any schema version)."""
    cpu = hardware.get("cpu") or {}
    uarch = cpu.get("microarch") or {}
    gpus: dict[str, int] = {}
    for g in hardware.get("gpus") or []:
        gpus[str(g.get("name", "?"))] = gpus.get(str(g.get("name", "?")), 0) + 1
    virt = hardware.get("virtualisation") or {}
    return {
        "arch": hardware.get("arch"),
        "vendor": cpu.get("vendor") or "",
        "model": cpu.get("model") or "?",
        "microarch": uarch.get("name"),
        "sockets": cpu.get("sockets"),
        "cpus": cpu.get("usable_cpus") or cpu.get("logical_cpus"),
        "memory_gib": round_gib(hardware.get("memory_bytes")),
        "gpus": [f"{n}x {name}" for name, n in sorted(gpus.items())],
        "virtualised": virt.get("virtualised"),
        "emulated": bool((hardware.get("emulation") or {}).get("emulated")),
    }


def machine_key(f: dict[str, Any]) -> str:
    """'m-' and 12 hex digits of the SHA-256 of the facts as canonical JSON."""
    return "m-" + hashlib.sha256(json.dumps(f, sort_keys=True).encode()).hexdigest()[:12]


def label(hardware: dict[str, Any]) -> str:
    """What the machine is, in a few words (see the module's docstring)."""
    f = facts(hardware)
    cpu = hardware.get("cpu") or {}
    if f["emulated"]:
        text = f"{f['arch']} emulated on {short_model(((hardware.get('emulation') or {}).get('host_cpu') or {}).get('model') or '?')}"
    else:
        core, _ = core_name(cpu)
        n = f["cpus"]
        unit = "vCPU" if f["virtualised"] else "CPUs"
        text = short_model(f["model"]) + (f" ({core})" if core != UNKNOWN_CORE else "") + (f", {n} {unit}" if n else "")
        if f["virtualised"]:
            text += ", VM"
    for g in f["gpus"]:
        text += f" + {g}"
    return text


def identity(hardware: dict[str, Any], name: str | None = None) -> dict[str, Any]:
    """A record's ``machine`` section: {"key", "label", "name", "facts", "core", "core_from"}."""
    f = facts(hardware)
    core, source = core_name(hardware.get("cpu") or {})
    return {"key": machine_key(f), "label": label(hardware), "name": name or None, "facts": f,
            "core": core, "core_from": source}


def display(machine: dict[str, Any]) -> str:
    """The name a report shows: the user's name where given, else the label."""
    return str(machine.get("name") or machine.get("label") or machine.get("key") or "?")


EXACT_MATCHES = ("model", "model name", "gpu")


def profile_relation(profile: dict[str, Any]) -> str:
    """How the machine relates to the profile it matched, never as its name: 'is skylake-8160
    (SKU)', 'GPU of h200-sxm', 'family of skylake-8160', 'same core as zen4-epyc-9654'."""
    name, by = profile.get("name"), profile.get("match_by")
    if not name:
        return ""
    return {"model": f"is {name} (SKU)", "model name": f"is {name} (model name)", "gpu": f"GPU of {name}",
            "microarchitecture": f"same core as {name}, another SKU",
            "family": f"family of {name}"}.get(by or "", f"resembles {name}")


def exact_profile(profile: dict[str, Any]) -> bool:
    """True when the match names this SKU (model) or this GPU: only then are its peaks this machine's."""
    return bool(profile.get("name")) and profile.get("match_by") in EXACT_MATCHES
