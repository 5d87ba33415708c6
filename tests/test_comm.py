"""The profiled communicator over a real single-process communicator (COMM_SELF)."""
import numpy as np
import pytest

from harness.protocol.comm import ProfiledComm, buffer_nbytes
from harness.protocol.phases import PhaseClock

MPI = pytest.importorskip("mpi4py.MPI")


def test_ops_are_timed_counted_and_sized() -> None:
    clock = PhaseClock()
    comm = ProfiledComm(MPI.COMM_SELF, clock)
    x = np.arange(10, dtype=np.float64)
    y = np.empty_like(x)
    with clock.phase("compute"):
        comm.Allreduce(x, y, op=MPI.SUM)
        comm.Allreduce(MPI.IN_PLACE, y)
        comm.Bcast([x, MPI.DOUBLE], root=0)
        assert comm.allreduce(3) == 3
        comm.Barrier()
    np.testing.assert_array_equal(y, x)
    prof = comm.profile()
    assert prof["Allreduce"]["calls"] == 2 and prof["Allreduce"]["bytes"] == 160
    assert prof["Bcast"]["bytes"] == 80
    assert prof["allreduce"]["calls"] == 1 and prof["allreduce"]["bytes"] > 0
    assert prof["Barrier"] == {"calls": 1, "bytes": 0, "seconds": prof["Barrier"]["seconds"]}
    phases = clock.take()
    assert phases["comm"]["count"] == 5
    total = sum(p["seconds"] for p in prof.values())
    assert phases["comm"]["seconds"] == pytest.approx(total, rel=0.05, abs=2e-5)
    assert comm.Get_size() == 1 and comm.rank == 0
    assert comm.Get_name() == MPI.COMM_SELF.Get_name()  # unwrapped calls pass through
    comm.reset()
    assert comm.profile() == {}


def test_buffer_sizes() -> None:
    assert buffer_nbytes(np.zeros(4, dtype=np.float32)) == 16
    assert buffer_nbytes(bytearray(7)) == 7
    assert buffer_nbytes(None) == 0


class _CountingHook:
    """Stands in for the PMPI hook: its counters grow only when told."""

    def __init__(self) -> None:
        self.counters = [0, 0, 0]

    def snapshot(self) -> tuple[int, int, int]:
        return tuple(self.counters)


def test_calls_made_past_the_wrapper_are_counted_once() -> None:
    """A compiled loop's own tally (numba-mpi calls) reaches the profile and the comm phase; where
    the PMPI hook saw those calls itself, they are not added a second time."""
    clock = PhaseClock()
    comm = ProfiledComm(MPI.COMM_SELF, clock)
    with clock.phase("compute"):
        with comm.calls_outside("Allreduce") as tally:
            tally += (3, 48, 0.002)
    assert comm.profile()["Allreduce"] == {"calls": 3, "bytes": 48, "seconds": pytest.approx(0.002)}
    assert clock.take()["comm"]["count"] == 3
    comm.reset()
    assert comm.profile() == {}

    hook = _CountingHook()
    hooked = ProfiledComm(MPI.COMM_SELF, PhaseClock(), hook=hook)
    with hooked.calls_outside("Allreduce") as tally:
        tally += (3, 48, 0.002)
        hook.counters[:] = [3, 48, 2_000_000]       # the hook counted them in C
    assert hooked.profile()["Allreduce"]["calls"] == 3
