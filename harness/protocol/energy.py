"""Energy per measured repeat, read from the counters the hardware keeps, with the method stated.

Sources: NVML's total-energy counter of each NVIDIA GPU (Volta and newer; millijoules since the
driver loaded; the ``pynvml`` module of the maintained ``nvidia-ml-py`` binding) and RAPL package
counters under ``/sys/class/powercap`` on CPUs that expose them (microjoules, wrapping at
``max_energy_range_uj``). Nothing is estimated: where neither exists the record says so.
Energy is node-level, so rank 0 reads it for its own node; the method string says that. GPU
counters are read only for a case that runs on a device backend (cuda): a CPU case on a GPU node
would otherwise be charged its idle GPUs' energy.
Phases are not split: RAPL updates about every millisecond but NVML's counter only every few
tens of milliseconds, coarser than most phases.
"""
from __future__ import annotations

import pathlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

POWERCAP = pathlib.Path("/sys/class/powercap")


@dataclass
class Counter:
    """One monotonic energy counter: ``read()`` gives joules; ``wrap_j`` where it wraps around."""

    name: str
    read: Callable[[], float]
    wrap_j: float | None = None

    def since(self, start: float) -> float:
        now = self.read()
        if now < start and self.wrap_j:
            now += self.wrap_j
        return now - start


def rapl_counters(powercap: pathlib.Path = POWERCAP) -> tuple[list[Counter], str]:
    """The package-level RAPL domains (intel-rapl:N, not their core/uncore/dram subzones), or the reason none."""
    if not powercap.is_dir():
        return [], "no RAPL powercap"
    counters = []
    for zone in sorted(powercap.glob("intel-rapl:*")):
        if zone.name.count(":") != 1:
            continue
        energy = zone / "energy_uj"
        try:
            energy.read_text()
        except OSError:
            continue    # present but readable only by root since 2020 (CVE-2020-8694)
        try:
            wrap = int((zone / "max_energy_range_uj").read_text()) * 1e-6
        except (OSError, ValueError):
            wrap = None
        label = (zone / "name").read_text().strip() if (zone / "name").exists() else zone.name

        def read(path: pathlib.Path = energy) -> float:
            return int(path.read_text()) * 1e-6
        counters.append(Counter(f"rapl:{label}", read, wrap))
    return counters, "" if counters else "no readable RAPL powercap"


def nvml_counters() -> tuple[list[Counter], str]:
    """Each GPU's NVML total-energy counter, or the reason there is none."""
    try:
        import pynvml
    except ImportError:
        return [], "no NVML (pip install nvidia-ml-py)"
    try:
        pynvml.nvmlInit()
        handles = [pynvml.nvmlDeviceGetHandleByIndex(i) for i in range(pynvml.nvmlDeviceGetCount())]
    except Exception as exc:  # noqa: BLE001 - NVMLError_LibraryNotFound, DriverNotLoaded, ...
        return [], f"no NVML ({type(exc).__name__})"
    counters = []
    for i, handle in enumerate(handles):
        try:
            pynvml.nvmlDeviceGetTotalEnergyConsumption(handle)
        except Exception:  # noqa: BLE001 - NVMLError_NotSupported before Volta
            continue

        def read(h: Any = handle) -> float:
            return pynvml.nvmlDeviceGetTotalEnergyConsumption(h) * 1e-3
        counters.append(Counter(f"nvml:gpu{i}", read))
    return counters, "" if counters else "no GPU with an NVML energy counter"


class EnergyMeter:
    """Reads every counter at the start and end of each measured repeat."""

    def __init__(self, counters: list[Counter], method: str) -> None:
        self.counters, self.method = counters, method
        self.per_counter: dict[str, list[float]] = {c.name: [] for c in counters}
        self._start: list[float] = []

    def start(self) -> None:
        self._start = [c.read() for c in self.counters]

    def stop(self) -> None:
        for c, s in zip(self.counters, self._start):
            self.per_counter[c.name].append(c.since(s))

    def result(self) -> dict[str, Any]:
        per_repeat = [sum(vals) for vals in zip(*self.per_counter.values())]
        return {"method": self.method, "joules_per_repeat": per_repeat, "per_counter": self.per_counter}


def energy_meter(powercap: pathlib.Path = POWERCAP, gpus_used: bool = True) -> tuple[EnergyMeter | None, dict[str, Any]]:
    """(meter, {}) where some counter exists, else (None, {"method": None, "reason": ...}).
    ``gpus_used`` False (the case runs on no GPU): the GPUs' counters are left out."""
    if gpus_used:
        gpus, gpu_why = nvml_counters()
    else:
        gpus, gpu_why = [], "GPUs not read: the case runs on none"
    cpus, cpu_why = rapl_counters(powercap)
    if not gpus and not cpus:
        return None, {"method": None, "reason": f"energy: not measurable here ({cpu_why}, {gpu_why})"}
    parts = []
    if gpus:
        parts.append(f"NVML total-energy counter of {len(gpus)} GPU(s)")
    if cpus:
        parts.append(f"RAPL package counters ({', '.join(c.name for c in cpus)})")
    method = " + ".join(parts) + ", read by rank 0 for its node at the start and end of each measured repeat"
    return EnergyMeter(gpus + cpus, method), {}
