"""The measured clock (harness.hardware.clock): how long it takes and whether it holds up.

``python benchmarks/clock_measurement.py [--runs 5]`` measures the clock in fresh interpreters
(numba's import and its cached kernels paid, as `harness info` and `harness run` pay them once per
machine and half hour), and exits 1 when the median takes 2 s or more. It prints each run's GHz
beside the reported clock, and the fp64 peak derived from it against the machine's measured
GEMM (numpy's BLAS, n = 2048, both cores): a peak the GEMM beats would say the clock is wrong.
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time

LIMIT_S = 2.0
MEASURE = ("import json, time; t = time.perf_counter(); from harness.hardware.clock import measure_clock; "
           "m = measure_clock(); m['wall_s'] = time.perf_counter() - t; print(json.dumps(m))")


def gemm_gflops(n: int = 2048, reps: int = 5) -> float:
    import numpy as np

    a, b = np.random.default_rng(0).standard_normal((2, n, n))
    a @ b
    best = min(_timed(lambda: a @ b) for _ in range(reps))
    return 2 * n ** 3 / best / 1e9


def _timed(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description="time and check harness.hardware.clock")
    p.add_argument("--runs", type=int, default=5)
    args = p.parse_args(argv)
    from harness.hardware.fingerprint import fingerprint
    from harness.hardware.peaks import machine_peaks

    runs = [json.loads(subprocess.run([sys.executable, "-c", MEASURE], capture_output=True, text=True,
                                      check=True).stdout) for _ in range(args.runs)]
    walls = [r["wall_s"] for r in runs]
    fp = fingerprint()
    print(f"reported clock: {fp['cpu'].get('max_mhz')} MHz")
    for r in runs:
        print(f"measured {r['ghz']} GHz (threads {r['per_thread_ghz']}) in {r['wall_s']:.2f} s")
    best = max(runs, key=lambda r: r["ghz"] or 0)
    peak = machine_peaks({**fp, "cpu": {**fp["cpu"], "measured_clock": best}}, {}, {})
    gemm = gemm_gflops()
    if peak.get("fp64_gflops"):
        print(f"fp64 peak {peak['fp64_gflops']:.1f} GFLOP/s ({peak['how']}); numpy GEMM {gemm:.1f} GFLOP/s = "
              f"{gemm / peak['fp64_gflops']:.0%} of it")
    median = statistics.median(walls)
    print(f"median time {median:.2f} s (limit {LIMIT_S} s): {'ok' if median < LIMIT_S else 'TOO SLOW'}")
    return 0 if median < LIMIT_S else 1


if __name__ == "__main__":
    sys.exit(main())
