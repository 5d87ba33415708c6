"""Workload roofline: measured GEMM and memory-bandwidth ceilings of a node, per backend.

GEMM (fp64, fp32; sizes from cache-resident to memory-sized) goes through the requested
backend's own CBLAS binding (``ctx.blas``), so the number belongs to that library; with no
backend requested, through numpy's matmul (numpy's BLAS, recorded by the evidence). The
bandwidth ceiling is a STREAM-style triad a = b + s*c compiled with numba (parallel over
the case's threads), counting 24 bytes per element as STREAM does. The record's metrics
hold the measured roofline (peak GFLOP/s per dtype, GB/s, ridge point), later usable by
models instead of vendor peaks, and the fraction of this machine's peak (harness.hardware.peaks).
"""
from __future__ import annotations

import time
from typing import Any

import numpy as np

from harness import Claim, Control, Param, Workload, hookimpl

DTYPES = {"fp64": np.float64, "fp32": np.float32}


class Roofline(Workload):
    name = "roofline"
    # bumped when the measured work changes (plugins/versions.lock; docs/plugins.md, "Versions")
    protocol_version = "1"
    paper = "measurement probe (roofline model: Williams, Waterman, Patterson 2009)"
    description = "GEMM GFLOP/s through the backend's BLAS and triad GB/s: this node's measured ceilings"
    frameworks = ("blas",)
    requires = ("numba",)
    params = {
        "gemm_sizes": Param(list, item=int, default=[128, 512, 1024, 2048], minimum=8, maximum=32768,
                            help="square GEMM orders, e.g. 128:512:2048"),
        "dtypes": Param(list, item=str, default=["fp64", "fp32"], choices=tuple(DTYPES),
                        help="fp64, fp32 or fp64:fp32"),
        "gemm_reps": Param(int, default=3, minimum=1, maximum=100, help="calls per size; the best is kept"),
        "triad_mib": Param(int, default=256, minimum=1, maximum=65536, help="MiB per triad array (3 arrays)"),
        "seed": Param(int, default=0, minimum=0),
    }
    sizes = {
        "smoke": {"gemm_sizes": [64, 256], "triad_mib": 16, "gemm_reps": 2},
        "small": {"gemm_sizes": [128, 512, 1024, 2048], "triad_mib": 256},
        "paper": {"gemm_sizes": [256, 1024, 2048, 4096, 8192], "triad_mib": 1024},
    }
    default_size = "small"
    throughput = ("peak_gflops_fp64", "GFLOP/s", "fraction_of_peak_fp64")
    ceilings = {"peak_gflops_fp64": "GFLOP/s", "peak_gflops_fp32": "GFLOP/s", "triad_gbs": "GB/s"}
    variation = {"gemm_max_rel_error": "exact"}   # the same inputs and library give the same error
    claims = [Claim("gemm_max_rel_error", "<=", 1e-10, paper_value=0.0, source="correctness of the library's fp64 GEMM",
                    description="max relative error of the smallest fp64 GEMM against numpy",
                    control=Control({"dtypes": ["fp32"]}, "an fp32 GEMM checked where fp64 is claimed: error ~1e-7"))]

    def setup(self, ctx) -> None:
        import numba

        from harness_plugins.roofline.triad import triad

        p = ctx.params
        rng = np.random.default_rng(p["seed"])
        mats = {}
        for dname in dict.fromkeys(p["dtypes"]):
            for n in p["gemm_sizes"]:
                a = rng.standard_normal((n, n)).astype(DTYPES[dname])
                b = rng.standard_normal((n, n)).astype(DTYPES[dname])
                mats[(dname, n)] = (a, b, np.empty_like(a))
        elems = p["triad_mib"] * 2**20 // 8
        arrays = (np.zeros(elems), np.full(elems, 1.0), np.full(elems, 2.0))
        numba.set_num_threads(max(1, min(ctx.threads, numba.config.NUMBA_NUM_THREADS)))
        triad(*arrays, 3.0)  # compile and touch every page outside the timing
        ctx.state.update(mats=mats, arrays=arrays, binding=ctx.blas)

    def _gemm(self, ctx, a: np.ndarray, b: np.ndarray, c: np.ndarray) -> None:
        binding = ctx.state["binding"]
        if binding is not None:
            binding.gemm(a, b, c)
        else:
            np.matmul(a, b, out=c)

    def run(self, ctx) -> dict[str, Any]:
        from harness_plugins.roofline.triad import triad

        p, s = ctx.params, ctx.state
        metrics: dict[str, Any] = {}
        peaks: dict[str, float] = {}
        with ctx.phase("compute"):
            for (dname, n), (a, b, c) in s["mats"].items():
                best = float("inf")
                for _ in range(p["gemm_reps"]):
                    t0 = time.perf_counter()
                    self._gemm(ctx, a, b, c)
                    best = min(best, time.perf_counter() - t0)
                gflops = 2.0 * n**3 / best / 1e9
                metrics[f"gflops_{dname}_n{n}"] = gflops
                peaks[dname] = max(peaks.get(dname, 0.0), gflops)
        with ctx.phase("memory"):
            a, b, c = s["arrays"]
            best = float("inf")
            for _ in range(3):
                t0 = time.perf_counter()
                triad(a, b, c, 3.0)
                best = min(best, time.perf_counter() - t0)
            gbs = 24.0 * a.size / best / 1e9
        with ctx.phase("check"):
            # the smallest GEMM in the highest precision that ran, against an fp64 reference
            best_dtype = "fp64" if any(k[0] == "fp64" for k in s["mats"]) else "fp32"
            small = min((k for k in s["mats"] if k[0] == best_dtype), key=lambda k: k[1], default=None)
            if small is not None:
                a, b, c = s["mats"][small]
                self._gemm(ctx, a, b, c)
                ref = a.astype(np.float64) @ b.astype(np.float64)
                metrics["gemm_max_rel_error"] = float(np.abs(c - ref).max() / np.abs(ref).max())
                metrics["gemm_checked"] = f"{small[0]} n={small[1]}"
        for dname, peak in peaks.items():
            metrics[f"peak_gflops_{dname}"] = peak
        # the work of this repeat, for the report's roofline model of other machines: every GEMM
        # call (and the check's), and the triad's 3 passes over 3 arrays of 8-byte words
        for dname in {k[0] for k in s["mats"]}:
            calls = sum(2.0 * n**3 * p["gemm_reps"] for d, n in s["mats"] if d == dname)
            if small is not None and small[0] == dname:
                calls += 2.0 * small[1] ** 3
            metrics[f"work_flops_{dname}"] = calls
        metrics["work_bytes"] = 3 * 24.0 * s["arrays"][0].size
        metrics["triad_gbs"] = gbs
        if "fp64" in peaks:
            metrics["ridge_flop_per_byte_fp64"] = peaks["fp64"] / gbs
        metrics["binding"] = (f"cblas:{s['binding'].path}" if s["binding"] is not None else "numpy.matmul")
        metrics.update(self._fractions(ctx, peaks, gbs))
        return metrics

    @staticmethod
    def _fractions(ctx, peaks: dict[str, float], gbs: float) -> dict[str, Any]:
        """Measured over this machine's peak for the threads used (ctx.peaks: a profile's only
        when it is this SKU, else derived from its core and clock). A measurement above 1.05x
        the peak gives no fraction, only why the peak is wrong (peak_problem)."""
        from harness import fraction_or_problem

        ref = ctx.peaks or {}
        out: dict[str, Any] = {"peak_source": ref.get("how", "no peaks given")}
        problems = []
        for dname, peak in peaks.items():
            fraction, problem = fraction_or_problem(peak, ref.get(f"{dname}_gflops"), f"{ref.get('source')} {dname} peak")
            if fraction is not None:
                out[f"fraction_of_peak_{dname}"] = fraction
            problems += [problem] if problem else []
        fraction, problem = fraction_or_problem(gbs, ref.get("bandwidth_gbs"), "memory bandwidth")
        if fraction is not None:
            out["fraction_of_bandwidth"] = fraction
        problems += [problem] if problem else []
        if problems:
            out["peak_problem"] = "; ".join(problems)
        return out


@hookimpl
def harness_workloads() -> list[Workload]:
    return [Roofline()]


@hookimpl
def harness_run_finished(records: list[dict[str, Any]], out_dir) -> None:
    from harness_plugins.roofline.plot import plot_roofline

    plot_roofline(records, out_dir)
