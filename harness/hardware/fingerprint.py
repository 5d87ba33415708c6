"""A fingerprint of this machine, read from sysfs, /proc, archspec and (once, cached) py-cpuinfo.

The CPU part (``describe_cpu``) reads files under a root folder, so tests run the real code on
fixtures of other machines' ``/proc/cpuinfo`` and sysfs. py-cpuinfo takes over a second and gets
cache sizes wrong on recent CPUs, so caches come from sysfs and py-cpuinfo is called at most once
per boot (cached on disk), only where /proc/cpuinfo names no model.
"""
from __future__ import annotations

import functools
import json
import os
import pathlib
import platform
import re
import shutil
import socket
import subprocess
from typing import Any

from harness.cache import cache_dir
from harness.hardware.identity import virtualisation
from harness.hardware.microarch import cpuinfo_arch, cpuinfo_fields, emulation, features, microarchitecture
from harness.hardware.sysfs import SYSFS_CPU, read_value
from harness.hardware.tuning import tuning

INTERESTING_FLAGS = re.compile(
    r"^(sse4_2|avx|avx2|fma|f16c|avx512\w*|amx\w*|avx_vnni|asimd\w*|neon|sve\w*|sme\d*|smef\w+|smei\w+|vsx|altivec|vmx)$")


def _size_bytes(text: str | None) -> int | None:
    if not text:
        return None
    m = re.fullmatch(r"(\d+)\s*([KMG]?)", text.upper())
    if not m:
        return None
    return int(m.group(1)) * {"": 1, "K": 1024, "M": 1024**2, "G": 1024**3}[m.group(2)]


def read_caches(cpu_dir: pathlib.Path = SYSFS_CPU / "cpu0") -> list[dict[str, Any]]:
    """Caches of one CPU from sysfs: level, type, size in bytes and how many CPUs share it."""
    caches = []
    for index in sorted(cpu_dir.glob("cache/index*")):
        shared = read_value(index / "shared_cpu_list") or ""
        caches.append({
            "level": int(read_value(index / "level") or 0),
            "type": read_value(index / "type"),
            "size_bytes": _size_bytes(read_value(index / "size")),
            "line_bytes": int(read_value(index / "coherency_line_size") or 0) or None,
            "shared_cpu_list": shared,
        })
    return caches


def count_sockets(cpu_root: pathlib.Path = SYSFS_CPU) -> int | None:
    ids = {read_value(p) for p in cpu_root.glob("cpu[0-9]*/topology/physical_package_id")}
    ids.discard(None)
    return len(ids) or None


def read_cpuinfo(root: pathlib.Path = pathlib.Path("/")) -> dict[str, str]:
    """The first processor's fields of ``root``/proc/cpuinfo ({} where it cannot be read)."""
    try:
        return cpuinfo_fields((root / "proc" / "cpuinfo").read_text(errors="replace"))
    except OSError:
        return {}


def isa_flags(fields: dict[str, str], uarch: dict[str, Any]) -> list[str]:
    """The ISA extensions that matter for numerical kernels: x86 'flags' and Arm 'Features' as
    listed, and for Power (which lists none) altivec from its cpu line plus vsx from POWER7 on
    (VSX is part of the ISA from POWER7; derived from the generation, not listed by the CPU)."""
    found = features(fields)
    if uarch.get("family") == "ppc64le" and (uarch.get("generation") or 0) >= 7:
        found.add("vsx")
    return sorted(f for f in found if INTERESTING_FLAGS.match(f))


def cpuid_numbers(fields: dict[str, str]) -> dict[str, int]:
    """x86 CPUID family, model and stepping as /proc/cpuinfo prints them ({} elsewhere): they
    name AMD's core generation where a VM leaves archspec only a generic level."""
    out = {}
    for key, name in (("cpu family", "family"), ("model", "model"), ("stepping", "stepping")):
        value = fields.get(key, "")
        if value.isdigit():
            out[name] = int(value)
    return out if "family" in out else {}


def describe_cpu(root: pathlib.Path = pathlib.Path("/"), interpreter_arch: str | None = None) -> dict[str, Any]:
    """The CPU as the files under ``root`` describe it: {"arch", "emulation", "cpu": {...}}.

    ``arch`` is the interpreter's (``platform.machine()``) for the live machine; for a fixture
    root, the architecture its cpuinfo describes unless ``interpreter_arch`` is given."""
    fields = read_cpuinfo(root)
    cpu_root = root / "sys" / "devices" / "system" / "cpu"
    described = cpuinfo_arch(fields)
    live = root == pathlib.Path("/")
    arch = interpreter_arch or (platform.machine() if live else described) or platform.machine()
    uarch = microarchitecture(fields, described or arch)
    reported = fields.get("model name") or fields.get("cpu")
    emulated = emulation(fields, described, arch)
    if emulated["emulated"]:
        # The CPU described is the host's, not what the code runs as: keep it as evidence only.
        emulated["host_cpu"] = {"model": reported, "microarch": uarch.get("name")}
        uarch = dict(microarchitecture({}, arch), reason="emulated: the emulated CPU's features are not visible")
        return {"arch": arch, "emulation": emulated,
                "cpu": {"model": f"{arch} under binary translation on {reported or 'an unknown CPU'}",
                        "model_reported": False, "vendor": "", "flags": [], "microarch": uarch,
                        "sockets": count_sockets(cpu_root), "caches": []}}
    if reported:
        model = reported
    elif uarch.get("name"):   # Arm cores name no model: vendor and microarchitecture say it
        model = f"{uarch['vendor']} {uarch['name']} (CPU part {fields.get('cpu part', '?')})"
    else:
        model = (py_cpuinfo().get("brand_raw") if live else None) or platform.processor() or "unknown"
    return {
        "arch": arch,
        "emulation": emulated,
        "cpu": {
            "model": model,
            "model_reported": bool(reported),
            "vendor": fields.get("vendor_id") or uarch.get("vendor") or "",
            "flags": isa_flags(fields, uarch),
            "microarch": uarch,
            "sockets": count_sockets(cpu_root),
            "caches": read_caches(cpu_root / "cpu0"),
            "cpuid": cpuid_numbers(fields),
        },
        "virtualisation": virtualisation(root, fields.get("flags") or fields.get("features") or ""),
    }


@functools.lru_cache(maxsize=1)
def py_cpuinfo() -> dict[str, Any]:
    """py-cpuinfo's answer, computed once per boot and kept in the user's cache folder."""
    boot = read_value(pathlib.Path("/proc/sys/kernel/random/boot_id")) or "unknown"
    cache = cache_dir() / f"cpuinfo-{boot}.json"
    try:
        return json.loads(cache.read_text())
    except (OSError, ValueError):
        pass
    try:
        import cpuinfo
        info = {k: v for k, v in cpuinfo.get_cpu_info().items()
                if isinstance(v, (str, int, float, list))}
    except Exception as exc:  # noqa: BLE001 - fingerprinting must never stop a run
        return {"error": repr(exc)}
    try:
        cache.parent.mkdir(parents=True, exist_ok=True)
        cache.write_text(json.dumps(info))
    except OSError:
        pass
    return info


def nvml_gpus() -> list[dict[str, Any]] | None:
    """Each NVIDIA GPU as NVML reports it (model, memory, driver and CUDA versions, max clocks,
    power limit), or None where NVML is missing (then nvidia-smi is asked)."""
    try:
        import pynvml
        pynvml.nvmlInit()
    except Exception:  # noqa: BLE001 - ImportError, NVMLError_LibraryNotFound, DriverNotLoaded
        return None

    def ask(fn: str, *args: Any) -> Any:
        try:
            value = getattr(pynvml, fn)(*args)
        except Exception:  # noqa: BLE001 - NVMLError_NotSupported on some boards
            return None
        return value.decode() if isinstance(value, bytes) else value

    cuda = ask("nvmlSystemGetCudaDriverVersion")
    gpus = []
    for i in range(ask("nvmlDeviceGetCount") or 0):
        h = ask("nvmlDeviceGetHandleByIndex", i)
        memory = ask("nvmlDeviceGetMemoryInfo", h)
        limit = ask("nvmlDeviceGetPowerManagementLimit", h)
        gpus.append({
            "vendor": "nvidia", "index": i, "name": ask("nvmlDeviceGetName", h) or "?",
            "memory": f"{memory.total // 2**20} MiB" if memory else None,
            "driver": ask("nvmlSystemGetDriverVersion"),
            "cuda_driver": f"{cuda // 1000}.{cuda % 1000 // 10}" if cuda else None,
            "max_sm_mhz": ask("nvmlDeviceGetMaxClockInfo", h, getattr(pynvml, "NVML_CLOCK_SM", 1)),
            "max_mem_mhz": ask("nvmlDeviceGetMaxClockInfo", h, getattr(pynvml, "NVML_CLOCK_MEM", 2)),
            "power_limit_w": limit / 1000 if limit else None,
            "source": "nvml",
        })
    return gpus


def _gpus() -> list[dict[str, Any]]:
    found = nvml_gpus()
    if found is not None:
        return found
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return []
    try:
        out = subprocess.run([smi, "--query-gpu=name,memory.total,driver_version",
                              "--format=csv,noheader"], capture_output=True, text=True, timeout=15)
    except (OSError, subprocess.TimeoutExpired):
        return []
    gpus = []
    for line in out.stdout.splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) == 3:
            gpus.append({"vendor": "nvidia", "name": parts[0], "memory": parts[1], "driver": parts[2],
                         "source": "nvidia-smi"})
    return gpus


def _cgroup_cpu_limit() -> float | None:
    text = read_value(pathlib.Path("/sys/fs/cgroup/cpu.max"))
    if not text or text.startswith("max"):
        return None
    quota, _, period = text.partition(" ")
    try:
        return int(quota) / int(period)
    except ValueError:
        return None


def usable_cpus() -> int:
    """The CPUs this process may run on (its affinity mask), the budget for ranks x threads."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


@functools.lru_cache(maxsize=1)
def fingerprint() -> dict[str, Any]:
    """The machine as a record fragment: cpu, caches, memory, gpus, os, clock tuning."""
    import psutil

    described = describe_cpu()
    freq = psutil.cpu_freq()
    cpu = described["cpu"]
    cpu.update({
        "logical_cpus": os.cpu_count(),
        "usable_cpus": usable_cpus(),
        "cgroup_cpu_limit": _cgroup_cpu_limit(),
        "physical_cores": psutil.cpu_count(logical=False),
        "max_mhz": (freq.max or freq.current) if freq else None,
    })
    return {
        "hostname": socket.gethostname(),
        "arch": described["arch"],
        "emulation": described["emulation"],
        "virtualisation": described.get("virtualisation") or virtualisation(),
        "os": platform.platform(),
        "cpu": cpu,
        "memory_bytes": psutil.virtual_memory().total,
        "gpus": _gpus(),
        "tuning": tuning(),
    }
