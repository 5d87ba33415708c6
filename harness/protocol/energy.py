"""Energy per measured repeat and per phase, measured by zeus, with the method stated.

zeus's ``ZeusMonitor`` reads the NVML total-energy counter of each NVIDIA GPU (Volta and newer)
and the RAPL package and DRAM zones of the CPUs where ``/sys/class/powercap`` is readable. Its
measurement windows are laid end to end along the phase clock (:mod:`harness.protocol.phases`):
each stretch between two phase boundaries is one window, charged to the phase open during it, as
the clock charges time, so the phases' joules of a repeat sum to the repeat's joules (the stretch
outside any phase is kept as ``(outside phases)``). The clock synchronises the device before each
boundary, so a window ends after the kernels queued in it.
Energy is node-level: one rank per node (the lowest on its host) reads it, and the record sums the
nodes. GPU counters are read only for a case that runs on a device backend (cuda): a CPU case on a
GPU node would otherwise be charged its idle GPUs' energy. Nothing is estimated: where there is no
counter, or zeus is not installed, the record says why. NVML's counter updates every few tens of
milliseconds, so a phase much shorter than that gets a coarse share; the repeat's sum is exact.
"""
from __future__ import annotations

import pathlib
from typing import Any, Protocol

POWERCAP = pathlib.Path("/sys/class/powercap")
OUTSIDE = "(outside phases)"
INSTALL = "pip install 'hpml-harness[energy]'"


class Monitor(Protocol):
    """The part of ``zeus.monitor.ZeusMonitor`` the meter uses (tests stub it here)."""

    gpu_indices: list[int]
    cpu_indices: list[int]

    def begin_window(self, key: str, sync_execution: bool = True) -> None: ...

    def end_window(self, key: str, sync_execution: bool = True) -> Any: ...


def rapl_readable(powercap: pathlib.Path = POWERCAP) -> str:
    """'' where a RAPL package zone can be read, else why not (checked before zeus is imported:
    importing it costs about a second, which a VM without counters should not pay per case)."""
    if not powercap.is_dir():
        return "no RAPL powercap"
    for zone in sorted(powercap.glob("intel-rapl:*")):
        try:
            (zone / "energy_uj").read_text()
            return ""
        except OSError:
            continue   # present but readable only by root since 2020 (CVE-2020-8694)
    return "no readable RAPL powercap"


def nvml_usable() -> str:
    """'' where NVML starts and sees a GPU, else why not."""
    try:
        import pynvml
    except ImportError:
        return "no NVML (pip install nvidia-ml-py)"
    try:
        pynvml.nvmlInit()
        count = pynvml.nvmlDeviceGetCount()
    except Exception as exc:  # noqa: BLE001 - NVMLError_LibraryNotFound, DriverNotLoaded, ...
        return f"no NVML ({type(exc).__name__})"
    return "" if count else "no GPU under NVML"


def joules(measured: Any) -> dict[str, float]:
    """A zeus ``Measurement``'s joules by source (gpu, cpu, dram), each summed over its devices."""
    return {"gpu": sum((measured.gpu_energy or {}).values()), "cpu": sum((measured.cpu_energy or {}).values()),
            "dram": sum((measured.dram_energy or {}).values())}


class EnergyMeter:
    """Zeus measurement windows end to end along the phase clock; joules per phase per repeat.
    Other windows may overlap them (zeus keeps each apart): :meth:`begin` and :meth:`end`."""

    def __init__(self, monitor: Monitor, method: str) -> None:
        self.monitor, self.method = monitor, method
        self._key = 0
        self._since: dict[str, float] = {}          # phase -> J since the last take()
        self._sources: dict[str, float] = {}        # gpu / cpu / dram -> J since the last take()
        self.repeats: list[dict[str, float]] = []   # per measured repeat: phase -> J
        self.sources: list[dict[str, float]] = []   # per measured repeat: source -> J

    def start(self) -> None:
        self.monitor.begin_window(f"harness-{self._key}", sync_execution=False)

    def charge(self, phase: str | None) -> None:
        """End the open window, charge it to ``phase`` (None: outside any phase), open the next.
        The phase clock calls this at each boundary, after synchronising the device."""
        measured = self.monitor.end_window(f"harness-{self._key}", sync_execution=False)
        self._key += 1
        self.monitor.begin_window(f"harness-{self._key}", sync_execution=False)
        parts = joules(measured)
        name = phase or OUTSIDE
        self._since[name] = self._since.get(name, 0.0) + sum(parts.values())
        for source, value in parts.items():
            self._sources[source] = self._sources.get(source, 0.0) + value

    def begin(self, key: str) -> None:
        """Open a window of one's own (a training's, to its quality target), the device synchronised."""
        self.monitor.begin_window(key, sync_execution=True)

    def end(self, key: str, cancel: bool = False) -> float:
        """Close :meth:`begin`'s window: its joules, all sources (0 where cancelled)."""
        return sum(joules(self.monitor.end_window(key, sync_execution=not cancel, cancel=cancel)).values())

    def take(self, measured: bool) -> None:
        """Close the stretch since the last take (the clock's own take() has just charged it):
        a measured repeat's joules are kept, anything else (setup, warmup) is dropped."""
        if measured:
            self.repeats.append(self._since)
            self.sources.append(self._sources)
        self._since, self._sources = {}, {}

    def result(self) -> dict[str, Any]:
        names = sorted({name for rep in self.repeats for name in rep})
        used = [s for s in ("gpu", "cpu", "dram") if any(rep.get(s) for rep in self.sources)]
        return {"method": self.method,
                "joules_per_repeat": [sum(rep.values()) for rep in self.repeats],
                "phases_j": {name: [rep.get(name, 0.0) for rep in self.repeats] for name in names},
                "sources_j": {s: [rep.get(s, 0.0) for rep in self.sources] for s in used}}


_active: EnergyMeter | None = None   # the meter of this worker process, where it reads energy


def activate(meter: EnergyMeter | None) -> None:
    """Make ``meter`` the one code of this process finds with :func:`active` (the worker sets it;
    a :class:`harness.judging.quality.QualityTracker` uses it for the joules to its target)."""
    global _active
    _active = meter


def active() -> EnergyMeter | None:
    """This process's meter, or None where this rank reads no energy."""
    return _active


def energy_meter(powercap: pathlib.Path = POWERCAP, gpus_used: bool = True,
                 reader: str = "rank 0") -> tuple[EnergyMeter | None, dict[str, Any]]:
    """(meter, {}) where zeus can read a counter, else (None, {"method": None, "reason": ...}).
    ``gpus_used`` False (the case runs on no GPU): the GPUs are left out. ``reader`` names the
    rank that reads for its node, for the method text."""
    cpu_why = rapl_readable(powercap)
    gpu_why = nvml_usable() if gpus_used else "GPUs not read: the case runs on none"
    if cpu_why and gpu_why:
        return None, {"method": None, "reason": f"energy: not measurable here ({cpu_why}, {gpu_why})"}
    try:
        from zeus.monitor import ZeusMonitor
    except ImportError:
        return None, {"method": None, "reason": f"energy: not measured: zeus is not installed ({INSTALL})"}
    try:
        monitor = ZeusMonitor(gpu_indices=None if not gpu_why else [], cpu_indices=None if not cpu_why else [])
    except Exception as exc:  # noqa: BLE001 - zeus raises RuntimeError, its own errors, NVML's
        return None, {"method": None, "reason": f"energy: zeus could not start ({type(exc).__name__}: {exc})"}
    if not monitor.gpu_indices and not monitor.cpu_indices:
        return None, {"method": None, "reason": "energy: not measurable here (zeus found no GPU or RAPL zone to read)"}
    parts = []
    if monitor.gpu_indices:
        parts.append(f"NVML energy of {len(monitor.gpu_indices)} GPU(s)")
    if monitor.cpu_indices:
        parts.append(f"RAPL CPU/DRAM of {len(monitor.cpu_indices)} package(s)")
    method = (f"zeus measurement windows ({' + '.join(parts)}), one per stretch between phase boundaries, "
              f"read by {reader} for its node")
    return EnergyMeter(monitor, method), {}
