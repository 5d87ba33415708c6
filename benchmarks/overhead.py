"""Per-call overhead of ``ctx.phase`` and of the profiled Allreduce against raw mpi4py.

Run with two ranks, the way the harness launches them::

    .venv/bin/mpiexec -n 2 .venv/bin/python benchmarks/overhead.py

Raw and profiled Allreduce calls are interleaved in blocks in the same run, so machine
noise hits both alike; the ratio of their medians is the figure to read. Two profilers are
measured: the C-level PMPI hook the harness uses where it can build one
(:mod:`harness.protocol.pmpi`), and the Python wrapper it falls back to.
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


def allreduce_times(comm, variants, blocks: int = 40, calls: int = 2000) -> dict[str, list[float]]:
    """Per-call seconds of 8-byte Allreduce for each (name, callable, hook on?) variant, block by
    block, interleaved so that machine noise hits every variant alike."""
    x = np.ones(1)
    y = np.empty(1)
    out: dict[str, list[float]] = {name: [] for name, _, _ in variants}
    for _ in range(blocks):
        for name, allreduce, hook_on in variants:
            hook_on()
            comm.Barrier()
            t0 = time.perf_counter()
            for _ in range(calls):
                allreduce(x, y)
            out[name].append((time.perf_counter() - t0) / calls)
    return out


def main() -> int:
    from harness.protocol.pmpi import build_hook, load_hook

    path, why = build_hook()
    why = why or load_hook(str(path))
    from mpi4py import MPI

    from harness.protocol.comm import ProfiledComm
    from harness.protocol.phases import PhaseClock
    from harness.protocol.pmpi import attach_hook

    comm = MPI.COMM_WORLD
    hook, why = attach_hook(str(path), MPI) if not why else (None, why)
    on = (lambda: hook.set_enabled(True)) if hook else (lambda: None)
    off = (lambda: hook.set_enabled(False)) if hook else (lambda: None)
    variants = [("raw", comm.Allreduce, off),
                ("python wrapper", ProfiledComm(comm, PhaseClock()).Allreduce, off)]
    if hook is not None:
        variants.append(("pmpi hook", ProfiledComm(comm, PhaseClock(), hook).Allreduce, on))
    allreduce_times(comm, variants, blocks=2, calls=500)  # warm up
    times = allreduce_times(comm, variants)
    phase_s = phase_overhead()
    if comm.Get_rank() == 0:
        raw = statistics.median(times["raw"])
        print(f"ranks: {comm.Get_size()}  MPI: {MPI.Get_library_version().splitlines()[0].strip()}")
        print(f"ctx.phase overhead: {phase_s * 1e6:.3f} us per phase (target < 2 us)")
        print(f"Allreduce 8 B raw: {raw * 1e6:.3f} us per call (median of {len(times['raw'])} blocks)")
        if hook is None:
            print(f"PMPI hook unavailable ({why}): only the Python wrapper is measured")
        else:
            print("  (raw = the hook loaded but switched off: one pass-through C call)")
        for name, _, _ in variants[1:]:
            t = statistics.median(times[name])
            print(f"Allreduce 8 B profiled, {name}: {t * 1e6:.3f} us per call, "
                  f"overhead {100 * (t / raw - 1):.1f}% (target < 10%)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
