"""How long `import harness` takes (the plugin contract's import; target: under 0.15 s), and what
it loads: each measurement is a fresh interpreter, alternating with a bare one so both see the
same load; the figure is the median difference.

    python benchmarks/import_time.py [--runs 15]
"""
from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time

TARGET_S = 0.15


def _once(code: str) -> float:
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], check=True)
    return time.perf_counter() - t0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=15)
    args = ap.parse_args()
    diffs, contract = [], []
    for _ in range(args.runs):
        bare = _once("pass")
        diffs.append(_once("import harness") - bare)
        contract.append(_once("from harness import Workload, Param, Claim, Control, hookimpl") - bare)
    loaded = subprocess.run([sys.executable, "-c", "import sys, harness; print(len(sys.modules)); "
                             "print(sorted(m for m in ('pandas', 'numpy', 'pluggy') if m in sys.modules))"],
                            capture_output=True, text=True, check=True).stdout.split("\n")
    print(f"import harness: median {statistics.median(diffs) * 1000:.0f} ms over a bare interpreter "
          f"({args.runs} runs; target {TARGET_S * 1000:.0f} ms); modules loaded {loaded[0]}, heavy ones {loaded[1]}")
    print(f"from harness import Workload, Param, Claim, Control, hookimpl: median "
          f"{statistics.median(contract) * 1000:.0f} ms")
    return 0 if statistics.median(diffs) < TARGET_S else 1


if __name__ == "__main__":
    sys.exit(main())
