"""A profiled wrapper over an mpi4py communicator.

Every collective and point-to-point call is timed, counted and its message size added,
and its time is charged to the ``comm`` phase of the phase clock. Anything not wrapped
(``Get_rank``, ``Split``, attributes) is passed straight to the real communicator.

Bytes are the message size as OSU reports it: the local send buffer of the call
(``Recv``/``Irecv``/``Scatter``: the receive buffer). For the lower-case pickle-based
calls they are the pickled size of the object sent (or received), so they are estimated
with one extra ``pickle.dumps``. Non-blocking calls are timed for the post only.
"""
from __future__ import annotations

import pickle
from collections.abc import Callable
from time import perf_counter
from typing import Any

from harness.protocol.phases import PhaseClock

COMM_PHASE = "comm"

# Buffer-based calls: name -> (argument index, keyword) of the buffer whose size is counted,
# and the fallback argument used when that buffer is MPI.IN_PLACE.
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


class ProfiledComm:
    """Times, counts and sizes every communication call of a wrapped mpi4py communicator."""

    def __init__(self, comm: Any, clock: PhaseClock) -> None:
        self.raw = comm
        self.clock = clock
        self.rank: int = comm.Get_rank()
        self.size: int = comm.Get_size()
        self.stats: dict[str, list[float]] = {}
        self._in_place = _in_place_marker()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.raw, name)

    def reset(self) -> None:
        """Forget the counts (called when warmup ends)."""
        self.stats = {}

    def profile(self) -> dict[str, dict[str, float]]:
        """{op: {"calls", "bytes", "seconds"}} since the last reset, for this rank."""
        return {op: {"calls": int(s[0]), "bytes": int(s[1]), "seconds": s[2]}
                for op, s in sorted(self.stats.items())}

    def _record(self, op: str, nbytes: int, seconds: float) -> None:
        s = self.stats.get(op)
        if s is None:
            self.stats[op] = [1, nbytes, seconds]
        else:
            s[0] += 1
            s[1] += nbytes
            s[2] += seconds

    def Get_rank(self) -> int:  # noqa: N802 - mpi4py's name
        return self.rank

    def Get_size(self) -> int:  # noqa: N802 - mpi4py's name
        return self.size


def _in_place_marker() -> Any:
    try:
        from mpi4py import MPI
        return MPI.IN_PLACE
    except ImportError:  # pragma: no cover - the worker only builds this with mpi4py
        return None


def _make_buffer_op(op: str, index: int, key: str, alt_index: int, alt_key: str) -> Callable[..., Any]:
    def call(self: ProfiledComm, *args: Any, **kwargs: Any) -> Any:
        buf = args[index] if len(args) > index else kwargs.get(key)
        if buf is self._in_place:
            buf = args[alt_index] if len(args) > alt_index else kwargs.get(alt_key)
        nbytes = buffer_nbytes(buf)
        clock = self.clock
        t0 = clock.enter(COMM_PHASE)
        try:
            return getattr(self.raw, op)(*args, **kwargs)
        finally:
            self._record(op, nbytes, clock.exit() - t0)

    call.__name__ = op
    call.__doc__ = f"Profiled ``{op}``: timed, counted, bytes of the buffer added."
    return call


def _make_object_op(op: str, index: int | None) -> Callable[..., Any]:
    def call(self: ProfiledComm, *args: Any, **kwargs: Any) -> Any:
        clock = self.clock
        t0 = clock.enter(COMM_PHASE)
        try:
            result = getattr(self.raw, op)(*args, **kwargs)
        finally:
            seconds = clock.exit() - t0
        obj = result if index is None else (args[index] if len(args) > index
                                                  else kwargs.get("sendobj", kwargs.get("obj")))
        self._record(op, _object_nbytes(obj), seconds)
        return result

    call.__name__ = op
    call.__doc__ = f"Profiled ``{op}``: timed, counted, pickled size added."
    return call


def _make_plain_op(op: str) -> Callable[..., Any]:
    def call(self: ProfiledComm, *args: Any, **kwargs: Any) -> Any:
        clock = self.clock
        t0 = clock.enter(COMM_PHASE)
        try:
            return getattr(self.raw, op)(*args, **kwargs)
        finally:
            self._record(op, 0, clock.exit() - t0)

    call.__name__ = op
    return call


for _op, (_i, _k, _ai, _ak) in _BUFFER_OPS.items():
    setattr(ProfiledComm, _op, _make_buffer_op(_op, _i, _k, _ai, _ak))
for _op, _i in _OBJECT_OPS.items():
    setattr(ProfiledComm, _op, _make_object_op(_op, _i))
for _op in _PLAIN_OPS:
    setattr(ProfiledComm, _op, _make_plain_op(_op))

PROFILED_OPS = tuple(_BUFFER_OPS) + tuple(_OBJECT_OPS) + _PLAIN_OPS
