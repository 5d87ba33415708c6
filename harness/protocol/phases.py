"""Exclusive phase timing: each instant of a repeat is charged to the innermost open phase.

Nesting is allowed (a ``comm`` call inside ``compute`` pauses ``compute``), so the
phase totals of a repeat never double-count and sum to at most the repeat's wall time.
Kept tiny because it sits on the hot path of every workload.
"""
from __future__ import annotations

from time import perf_counter


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

    __slots__ = ("totals", "counts", "_stack", "_last", "_phases")

    def __init__(self) -> None:
        self.totals: dict[str, float] = {}
        self.counts: dict[str, int] = {}
        self._stack: list[str] = []
        self._last = perf_counter()
        self._phases: dict[str, _Phase] = {}

    def phase(self, name: str) -> _Phase:
        """A reusable context manager that charges its body to ``name``."""
        p = self._phases.get(name)
        if p is None:
            p = self._phases[name] = _Phase(self, name)
        return p

    def enter(self, name: str) -> float:
        now = perf_counter()
        stack = self._stack
        if stack:
            top = stack[-1]
            self.totals[top] = self.totals.get(top, 0.0) + (now - self._last)
        stack.append(name)
        self.counts[name] = self.counts.get(name, 0) + 1
        self._last = now
        return now

    def exit(self) -> float:
        now = perf_counter()
        name = self._stack.pop()
        self.totals[name] = self.totals.get(name, 0.0) + (now - self._last)
        self._last = now
        return now

    def take(self) -> dict[str, dict[str, float]]:
        """Return {phase: {"seconds", "count"}} since the last take, and start afresh.

        Open phases are charged up to now and stay open.
        """
        now = perf_counter()
        if self._stack:
            top = self._stack[-1]
            self.totals[top] = self.totals.get(top, 0.0) + (now - self._last)
        self._last = now
        out = {name: {"seconds": secs, "count": self.counts.get(name, 0)}
               for name, secs in self.totals.items()}
        self.totals = {}
        self.counts = {}
        return out
