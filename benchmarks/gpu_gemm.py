"""GEMM throughput through torch on the GPU (fp32, tf32, bf16) against a hardware profile's peaks.

    python benchmarks/gpu_gemm.py --profile h200-sxm --out OUT/gemm.json

Timed with CUDA events around 20 back-to-back matmuls after 3 warm-up ones, best of 5, for
n = 2048, 4096, 8192; TFLOP/s = 2 n^3 / time. The profile's peak for each precision
(fp32_gflops, tf32_tensor_gflops, bf16_tensor_gflops) gives the fraction of peak. Exits 2
without a GPU.
"""
from __future__ import annotations

import argparse
import json
import sys

PEAK_KEY = {"fp32": "fp32_gflops", "tf32": "tf32_tensor_gflops", "bf16": "bf16_tensor_gflops"}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--profile", default="h200-sxm")
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    import torch

    if not torch.cuda.is_available():
        print("gpu_gemm.py: torch sees no CUDA device", file=sys.stderr)
        return 2
    from harness import hardware_profiles

    peaks = hardware_profiles()[args.profile]["peak"]
    rows = []
    for precision in ("fp32", "tf32", "bf16"):
        torch.backends.cuda.matmul.allow_tf32 = precision == "tf32"
        dtype = torch.bfloat16 if precision == "bf16" else torch.float32
        for n in (2048, 4096, 8192):
            a = torch.randn(n, n, device="cuda", dtype=dtype)
            b = torch.randn(n, n, device="cuda", dtype=dtype)
            for _ in range(3):
                a @ b
            best = float("inf")
            for _ in range(5):
                start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                start.record()
                for _ in range(20):
                    a @ b
                end.record()
                torch.cuda.synchronize()
                best = min(best, start.elapsed_time(end) / 1000 / 20)
            tflops = 2 * n**3 / best / 1e12
            peak = peaks[PEAK_KEY[precision]] / 1000
            rows.append({"precision": precision, "n": n, "seconds": best, "tflops": tflops,
                         "peak_tflops": peak, "fraction_of_peak": tflops / peak})
            print(f"{precision:5s} n={n:5d} {tflops:8.1f} TFLOP/s  {100 * tflops / peak:5.1f}% of {peak:.0f}")
    with open(args.out, "w") as f:
        json.dump({"device": torch.cuda.get_device_name(0), "torch": torch.__version__,
                   "cuda": torch.version.cuda, "profile": args.profile, "rows": rows}, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
