"""Exclusive phase timing: each instant of a repeat is charged to the innermost open phase.

Nesting is allowed (a ``comm`` call inside ``compute`` pauses ``compute``), so the
phase totals of a repeat never double-count and sum to at most the repeat's wall time.
Communication calls do not push a phase (too slow for an 8-byte Allreduce): they add
their nanoseconds to ``comm_ns``, which is taken out of the enclosing phase at its boundary.
Calls counted in C (the PMPI hook of :mod:`harness.protocol.pmpi`) are read from its
counters at the same boundaries.
With an asynchronous backend (a GPU) the clock is given the backend's ``synchronize`` and calls
it before reading the time at every boundary: otherwise a phase would end while its kernels are
still queued and measure only the launch. Where energy is measured, the clock's ``meter``
(:class:`harness.protocol.energy.EnergyMeter`) is charged at the same boundaries, to the same
phase (communication inside a phase is charged to that phase's energy).
Kept tiny because it sits on the hot path of every workload. The work a phase did (floating-point
operations and bytes the workload counted, :meth:`PhaseClock.add_work`) is kept beside its seconds,
off the hot path: a workload counts once per step or per repeat, not per call.
"""
from __future__ import annotations

from collections.abc import Callable
from time import perf_counter
from typing import Any

COMM_PHASE = "comm"


class _Phase:
    __slots__ = ("_clock", "_name")

    def __init__(self, clock: PhaseClock, name: str) -> None:
        self._clock = clock
        self._name = name

    def __enter__(self) -> _Phase:
        self._clock.enter(self._name)
        return self

    def __exit__(self, *exc: object) -> None:
        self._clock.exit()


class PhaseClock:
    """Accumulates exclusive seconds and entry counts per phase name."""

    __slots__ = ("totals", "counts", "comm_ns", "comm_n", "_comm_seen", "_stack", "_last", "_phases",
                 "external", "_ext_n0", "_ext_ns0", "sync", "meter", "work")

    def __init__(self, sync: Callable[[], None] | None = None) -> None:
        self.sync = sync    # the device's synchronize, called before every reading of the clock
        self.totals: dict[str, float] = {}
        self.counts: dict[str, int] = {}
        self.comm_ns = 0    # nanoseconds of profiled communication since the last take()
        self.comm_n = 0     # number of profiled communication calls since the last take()
        self._comm_seen = 0
        self._stack: list[str] = []
        self._last = perf_counter()
        self._phases: dict[str, _Phase] = {}
        self.external: Any = None  # [calls, bytes, ns] counted in C, only growing
        self._ext_n0 = 0
        self._ext_ns0 = 0
        self.meter: Any = None     # an EnergyMeter, charged at every boundary where energy is measured
        self.work: dict[str, list[float]] = {}   # phase -> [flops, bytes] counted since the last take()

    def attach_external(self, counters: Any) -> None:
        """Also charge the communication that ``counters`` ([calls, bytes, ns]) records."""
        self.external = counters
        self._ext_n0, self._ext_ns0 = counters[0], counters[2]

    def phase(self, name: str) -> _Phase:
        """A reusable context manager that charges its body to ``name``."""
        p = self._phases.get(name)
        if p is None:
            p = self._phases[name] = _Phase(self, name)
        return p

    def add_work(self, name: str, flops: float, nbytes: float = 0.0) -> None:
        """Count ``flops`` floating-point operations (and ``nbytes`` bytes moved) to phase ``name``."""
        counted = self.work.get(name)
        if counted is None:
            counted = self.work[name] = [0.0, 0.0]
        counted[0] += flops
        counted[1] += nbytes

    def _charge(self, now: float) -> None:
        """Charge the time since the last boundary, less the comm inside it, to the open phase."""
        ext = self.external  # counters of the C hook, if one is attached
        comm_ns = self.comm_ns if ext is None else self.comm_ns + ext[2] - self._ext_ns0
        if self._stack:
            top = self._stack[-1]
            inner_comm = (comm_ns - self._comm_seen) * 1e-9
            self.totals[top] = self.totals.get(top, 0.0) + (now - self._last - inner_comm)
        self._comm_seen = comm_ns
        self._last = now
        if self.meter is not None:
            self.meter.charge(self._stack[-1] if self._stack else None)

    def now(self) -> float:
        """perf_counter(), after the device (if any) has finished what was queued."""
        if self.sync is not None:
            self.sync()
        return perf_counter()

    def enter(self, name: str) -> None:
        self._charge(self.now())
        self._stack.append(name)
        self.counts[name] = self.counts.get(name, 0) + 1

    def exit(self) -> None:
        self._charge(self.now())
        self._stack.pop()

    def take(self) -> dict[str, dict[str, float]]:
        """Return {phase: {"seconds", "count"[, "flops", "bytes"]}} since the last take, and start afresh.

        Open phases are charged up to now and stay open; work is given where it was counted.
        """
        self._charge(self.now())
        totals, counts = self.totals, self.counts
        comm_ns, comm_n = self.comm_ns, self.comm_n
        ext = self.external
        if ext is not None:
            ext_n, ext_ns = ext[0], ext[2]
            comm_ns += ext_ns - self._ext_ns0
            comm_n += ext_n - self._ext_n0
            self._ext_n0, self._ext_ns0 = ext_n, ext_ns
        if comm_n:
            totals[COMM_PHASE] = totals.get(COMM_PHASE, 0.0) + comm_ns * 1e-9
            counts[COMM_PHASE] = counts.get(COMM_PHASE, 0) + comm_n
        out = {name: {"seconds": secs, "count": counts.get(name, 0)} for name, secs in totals.items()}
        for name, (flops, nbytes) in self.work.items():
            entry = out.setdefault(name, {"seconds": 0.0, "count": 0})
            entry["flops"] = flops
            if nbytes:
                entry["bytes"] = nbytes
        self.totals, self.counts, self.work = {}, {}, {}
        self.comm_ns, self.comm_n, self._comm_seen = 0, 0, 0
        return out
