"""Per-call overhead of ``ctx.phase`` and of the profiled Allreduce against raw mpi4py.

Run with two ranks, the way the harness launches them::

    .venv/bin/mpiexec -n 2 .venv/bin/python benchmarks/overhead.py

Raw and profiled Allreduce calls are interleaved in blocks in the same run, so machine
noise hits both alike; the ratio of their medians is the figure to read.
"""
from __future__ import annotations

import statistics
import sys
import time

import numpy as np


def phase_overhead(n: int = 200_000) -> float:
    """Seconds per ``with clock.phase(...)`` beyond an empty loop."""
    from harness.protocol.phases import PhaseClock

    clock = PhaseClock()
    phase = clock.phase
    t0 = time.perf_counter()
    for _ in range(n):
        pass
    empty = time.perf_counter() - t0
    t0 = time.perf_counter()
    for _ in range(n):
        with phase("compute"):
            pass
    return (time.perf_counter() - t0 - empty) / n


def allreduce_times(comm, profiled, blocks: int = 40, calls: int = 2000) -> tuple[list[float], list[float]]:
    """Per-call seconds of raw and profiled 8-byte Allreduce, block by block, interleaved."""
    x = np.ones(1)
    y = np.empty(1)
    raw_t, prof_t = [], []
    for _ in range(blocks):
        for target, out in ((comm, raw_t), (profiled, prof_t)):
            comm.Barrier()
            t0 = time.perf_counter()
            for _ in range(calls):
                target.Allreduce(x, y)
            out.append((time.perf_counter() - t0) / calls)
    return raw_t, prof_t


def main() -> int:
    from mpi4py import MPI

    from harness.protocol.comm import ProfiledComm
    from harness.protocol.phases import PhaseClock

    comm = MPI.COMM_WORLD
    profiled = ProfiledComm(comm, PhaseClock())
    allreduce_times(comm, profiled, blocks=2, calls=500)  # warm up
    raw_t, prof_t = allreduce_times(comm, profiled)
    phase_s = phase_overhead()
    if comm.Get_rank() == 0:
        raw, prof = statistics.median(raw_t), statistics.median(prof_t)
        print(f"ranks: {comm.Get_size()}  MPI: {MPI.Get_library_version().splitlines()[0].strip()}")
        print(f"ctx.phase overhead: {phase_s * 1e6:.3f} us per phase (target < 2 us)")
        print(f"Allreduce 8 B raw:      {raw * 1e6:.3f} us per call (median of {len(raw_t)} blocks)")
        print(f"Allreduce 8 B profiled: {prof * 1e6:.3f} us per call")
        print(f"profiled/raw: {prof / raw:.3f}  overhead {100 * (prof / raw - 1):.1f}% (target < 10%)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
