"""A profiled wrapper over an mpi4py communicator.

Every collective and point-to-point call is timed, counted and its message size added,
and its time is charged to the ``comm`` phase of the phase clock. Anything not wrapped
(``Get_rank``, ``Split``, attributes) is passed straight to the real communicator.

Bytes are the message size as OSU reports it: the local send buffer of the call
(``Recv``/``Irecv``/``Scatter``: the receive buffer). For the lower-case pickle-based
calls they are the pickled size of the object sent (or received), so they are estimated
with one extra ``pickle.dumps``. Non-blocking calls are timed for the post only.

The wrappers are closures bound per instance (no method binding, no try/finally). Even so
a Python wrapper costs about 0.5 us, 20 % of an 8-byte Allreduce; so where the PMPI hook
of :mod:`harness.protocol.pmpi` is loaded, ``Allreduce`` is the raw mpi4py method and its
calls, bytes and time are counted in C (every MPI_Allreduce of the process, on any
communicator). ``profiler`` says which of the two counts Allreduce.
"""
from __future__ import annotations

import contextlib
import pickle
from collections.abc import Callable, Iterator
from time import perf_counter_ns
from typing import Any

from harness.protocol.phases import PhaseClock
from harness.protocol.pmpi import AllreduceHook

# Buffer-based calls: name -> (argument index, keyword) of the buffer whose size is counted,
# and the argument used instead when that buffer is MPI.IN_PLACE.
_BUFFER_OPS: dict[str, tuple[int, str, int, str]] = {
    "Allreduce": (0, "sendbuf", 1, "recvbuf"),
    "Reduce": (0, "sendbuf", 1, "recvbuf"),
    "Bcast": (0, "buf", 0, "buf"),
    "Allgather": (0, "sendbuf", 1, "recvbuf"),
    "Gather": (0, "sendbuf", 1, "recvbuf"),
    "Scatter": (1, "recvbuf", 0, "sendbuf"),
    "Alltoall": (0, "sendbuf", 1, "recvbuf"),
    "Reduce_scatter": (0, "sendbuf", 1, "recvbuf"),
    "Reduce_scatter_block": (0, "sendbuf", 1, "recvbuf"),
    "Scan": (0, "sendbuf", 1, "recvbuf"),
    "Send": (0, "buf", 0, "buf"),
    "Ssend": (0, "buf", 0, "buf"),
    "Recv": (0, "buf", 0, "buf"),
    "Sendrecv": (0, "sendbuf", 0, "sendbuf"),
    "Isend": (0, "buf", 0, "buf"),
    "Irecv": (0, "buf", 0, "buf"),
    "Iallreduce": (0, "sendbuf", 1, "recvbuf"),
    "Ibcast": (0, "buf", 0, "buf"),
}
# Pickle-based calls: name -> index of the object sent; None counts the returned object.
_OBJECT_OPS: dict[str, int | None] = {
    "allreduce": 0, "reduce": 0, "bcast": 0, "allgather": 0, "gather": 0,
    "scatter": 0, "alltoall": 0, "send": 0, "ssend": 0, "sendrecv": 0, "isend": 0,
    "recv": None,
}
_PLAIN_OPS = ("Barrier", "barrier")
PROFILED_OPS = tuple(_BUFFER_OPS) + tuple(_OBJECT_OPS) + _PLAIN_OPS


def buffer_nbytes(buf: Any) -> int:
    """Size in bytes of an mpi4py buffer spec: an array, or [array, MPI type, ...]."""
    if isinstance(buf, (list, tuple)):
        buf = buf[0] if buf else None
    n = getattr(buf, "nbytes", None)
    if n is not None:
        return int(n)
    if buf is None:
        return 0
    try:
        return memoryview(buf).nbytes
    except TypeError:
        return 0


def _object_nbytes(obj: Any) -> int:
    try:
        return len(pickle.dumps(obj, pickle.HIGHEST_PROTOCOL))
    except Exception:  # noqa: BLE001 - unpicklable objects fail in MPI itself
        return 0


def _buffer_op(raw: Callable[..., Any], stats: list[Any], clock: PhaseClock, in_place: Any,
               index: int, key: str, alt_index: int, alt_key: str) -> Callable[..., Any]:
    def call(*args: Any, **kwargs: Any) -> Any:
        buf = args[index] if len(args) > index else kwargs.get(key)
        if buf is in_place:
            buf = args[alt_index] if len(args) > alt_index else kwargs.get(alt_key)
        try:
            n = buf.nbytes
        except AttributeError:
            n = buffer_nbytes(buf)
        t0 = perf_counter_ns()
        result = raw(*args, **kwargs)
        dt = perf_counter_ns() - t0
        stats[0] += 1
        stats[1] += n
        stats[2] += dt
        clock.comm_ns += dt
        clock.comm_n += 1
        return result
    return call


def _allreduce_op(raw: Callable[..., Any], stats: list[Any], clock: PhaseClock,
                  in_place: Any, sum_op: Any) -> Callable[..., Any]:
    """Allreduce is the hot call of data-parallel training: a fixed signature, no packing."""
    # Everything the call touches is bound as a default argument: local lookups only.
    def Allreduce(sendbuf: Any, recvbuf: Any, op: Any = sum_op, _raw: Any = raw,  # noqa: N802
                  _pc: Any = perf_counter_ns, _st: list[Any] = stats, _cl: PhaseClock = clock,
                  _in_place: Any = in_place) -> None:
        buf = recvbuf if sendbuf is _in_place else sendbuf
        try:
            n = buf.nbytes
        except AttributeError:
            n = buffer_nbytes(buf)
        t0 = _pc()
        _raw(sendbuf, recvbuf, op)
        dt = _pc() - t0
        _st[0] += 1
        _st[1] += n
        _st[2] += dt
        _cl.comm_ns += dt
        _cl.comm_n += 1
    return Allreduce


def _object_op(raw: Callable[..., Any], stats: list[Any], clock: PhaseClock,
               index: int | None) -> Callable[..., Any]:
    def call(*args: Any, **kwargs: Any) -> Any:
        t0 = perf_counter_ns()
        result = raw(*args, **kwargs)
        dt = perf_counter_ns() - t0
        if index is None:
            obj = result
        else:
            obj = args[index] if len(args) > index else kwargs.get("sendobj", kwargs.get("obj"))
        stats[0] += 1
        stats[1] += _object_nbytes(obj)
        stats[2] += dt
        clock.comm_ns += dt
        clock.comm_n += 1
        return result
    return call


def _plain_op(raw: Callable[..., Any], stats: list[Any], clock: PhaseClock) -> Callable[..., Any]:
    def call(*args: Any, **kwargs: Any) -> Any:
        t0 = perf_counter_ns()
        result = raw(*args, **kwargs)
        dt = perf_counter_ns() - t0
        stats[0] += 1
        stats[2] += dt
        clock.comm_ns += dt
        clock.comm_n += 1
        return result
    return call


class ProfiledComm:
    """Times, counts and sizes every communication call of a wrapped mpi4py communicator."""

    def __init__(self, comm: Any, clock: PhaseClock, hook: AllreduceHook | None = None) -> None:
        self.raw = comm
        self.clock = clock
        self.rank: int = comm.Get_rank()
        self.size: int = comm.Get_size()
        # Per op: [calls, bytes, nanoseconds], mutated in place by the wrappers.
        self._stats: dict[str, list[int]] = {op: [0, 0, 0] for op in PROFILED_OPS}
        in_place, sum_op = _mpi_constants()
        for op, spec in _BUFFER_OPS.items():
            if hasattr(comm, op):
                setattr(self, op, _buffer_op(getattr(comm, op), self._stats[op], clock, in_place, *spec))
        self._hook = hook
        self._hook_base = (0, 0, 0)
        self._outside: dict[str, list[int]] = {}   # calls made past this wrapper, counted by their caller
        self.profiler = "python"
        if hook is not None:
            self.Allreduce = comm.Allreduce
            self._hook_base = hook.snapshot()
            clock.attach_external(hook.counters)
            self.profiler = "pmpi"
        elif hasattr(comm, "Allreduce") and sum_op is not None:
            self.Allreduce = _allreduce_op(comm.Allreduce, self._stats["Allreduce"], clock, in_place, sum_op)
        for op, index in _OBJECT_OPS.items():
            if hasattr(comm, op):
                setattr(self, op, _object_op(getattr(comm, op), self._stats[op], clock, index))
        for op in _PLAIN_OPS:
            if hasattr(comm, op):
                setattr(self, op, _plain_op(getattr(comm, op), self._stats[op], clock))

    def __getattr__(self, name: str) -> Any:
        return getattr(self.raw, name)

    def reset(self) -> None:
        """Forget the counts (called when warmup ends); the wrappers keep their stats lists."""
        for s in self._stats.values():
            s[0], s[1], s[2] = 0, 0, 0
        self._outside.clear()
        if self._hook is not None:
            self._hook_base = self._hook.snapshot()

    def _op_stats(self, op: str) -> list[int]:
        """[calls, bytes, ns] of one op since the last reset, from C where the hook counts it."""
        if op == "Allreduce" and self._hook is not None:
            now, base = self._hook.snapshot(), self._hook_base
            counted = [now[0] - base[0], now[1] - base[1], now[2] - base[2]]
        else:
            counted = list(self._stats[op])
        outside = self._outside.get(op)
        return counted if outside is None else [a + b for a, b in zip(counted, outside)]

    @contextlib.contextmanager
    def calls_outside(self, op: str) -> Iterator[Any]:
        """For calls to the MPI library that bypass this wrapper (a compiled loop calling
        ``MPI_Allreduce`` through numba-mpi): the block fills the yielded float64 tally
        [calls, bytes, seconds], which is added to ``op``'s counts and to the comm phase, unless
        the PMPI hook counted those calls itself."""
        import numpy as np

        tally = np.zeros(3)
        before = self._hook.snapshot()[0] if self._hook is not None and op == "Allreduce" else None
        yield tally
        calls, nbytes, ns = int(tally[0]), int(tally[1]), int(tally[2] * 1e9)
        if not calls or (before is not None and self._hook.snapshot()[0] - before >= calls):  # type: ignore[union-attr]
            return
        counts = self._outside.setdefault(op, [0, 0, 0])
        counts[0] += calls
        counts[1] += nbytes
        counts[2] += ns
        self.clock.comm_ns += ns
        self.clock.comm_n += calls

    def profile(self) -> dict[str, dict[str, float]]:
        """{op: {"calls", "bytes", "seconds"}} since the last reset, for this rank."""
        out = {}
        for op in sorted(self._stats):
            s = self._op_stats(op)
            if s[0]:
                out[op] = {"calls": s[0], "bytes": s[1], "seconds": s[2] * 1e-9}
        return out

    def counters(self, op: str) -> tuple[int, int, float]:
        """(calls, bytes, seconds) of one op since the last reset: lets a workload report its
        own per-repeat figures as deltas."""
        s = self._op_stats(op)
        return s[0], s[1], s[2] * 1e-9

    def comm_seconds(self) -> float:
        """Seconds in all profiled calls since the last reset."""
        return sum(self._op_stats(op)[2] for op in self._stats) * 1e-9

    def Get_rank(self) -> int:  # noqa: N802 - mpi4py's name
        return self.rank

    def Get_size(self) -> int:  # noqa: N802 - mpi4py's name
        return self.size


def _mpi_constants() -> tuple[Any, Any]:
    """(MPI.IN_PLACE, MPI.SUM), or Nones when mpi4py is absent (tests with fake comms)."""
    try:
        from mpi4py import MPI
        return MPI.IN_PLACE, MPI.SUM
    except ImportError:  # pragma: no cover - the worker only builds this with mpi4py
        return None, None
