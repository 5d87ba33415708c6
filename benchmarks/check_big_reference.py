"""`harness check` against a reference of many runs: wall time and peak memory (issue 55).

    .venv/bin/python benchmarks/check_big_reference.py [--runs 50000] [--work DIR] [--keep]

One real run of the roofline case is made here (smoke size, one 256 GEMM, 5 repeats); the
reference is that record copied ``--runs`` times with new ids, run ids, dates and samples scaled
by a seeded factor within +-5 %, as a machine's runs over months would be; the check judges the
real run against it. Targets (2-core machine): under 60 s and 1 GiB. Exit status 1 when missed.
The reference is read one record at a time and the bootstrap resamples at most 2,000 of its
pooled samples (harness.check): without both, 10,000 runs needed 6.7 GiB.
"""
from __future__ import annotations

import argparse
import json
import pathlib
import random
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from readers import LIMIT_MIB, LIMIT_S, measure  # noqa: E402  (the same wall-time and PSS sampler)

CASE = ["--workload", "roofline", "--size", "smoke", "--backend", "openblas", "--threads", "1", "--repeats", "5",
        "--param", "gemm_sizes=256", "--param", "triad_mib=1"]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description="harness check against a reference of many runs")
    p.add_argument("--runs", type=int, default=50000)
    p.add_argument("--work", type=pathlib.Path)
    p.add_argument("--keep", action="store_true")
    args = p.parse_args(argv)
    work = args.work or pathlib.Path(tempfile.mkdtemp(prefix="harness-check-bench-"))
    harness = [sys.executable, "-m", "harness"]
    subprocess.run([*harness, "run", *CASE, "--out", str(work / "run")], check=True, capture_output=True)
    line = (work / "run" / "results.jsonl").read_text().splitlines()[0]
    record = json.loads(line)
    rng = random.Random(0)
    (work / "reference").mkdir(parents=True, exist_ok=True)
    with open(work / "reference" / "results.jsonl", "w") as f:
        for i in range(args.runs):
            scale = 1 + rng.uniform(-0.05, 0.05)
            copy = dict(record, id=f"{i:032x}", run_id=f"bench-{i}",
                        created=f"2026-{1 + i % 12:02d}-{1 + i % 28:02d}T00:00:{i % 60:02d}+00:00",
                        samples=[s * scale for s in record["samples"]])
            f.write(json.dumps(copy, separators=(",", ":")) + "\n")
    size = (work / "reference" / "results.jsonl").stat().st_size
    code, wall, mib, err = measure([*harness, "check", "--reference", str(work / "reference"), str(work / "run"),
                                    "--json", str(work / "check.json")])
    if not (work / "check.json").exists():
        print(f"check exited {code} with no JSON: {err[-2000:]}")
        return 1
    (check,) = json.loads((work / "check.json").read_text())
    ok = wall < LIMIT_S and mib < LIMIT_MIB
    print(f"check against {args.runs} runs ({size / 2**20:.0f} MiB): {wall:.1f} s, {mib:.0f} MiB peak; "
          f"status {check['status']}, ratio {check['ratio']:.3f}, {len(check['reference_runs'])} runs pooled "
          f"(limits {LIMIT_S:g} s, {LIMIT_MIB:g} MiB): {'ok' if ok else 'MISSED'}")
    if not args.keep and args.work is None:
        shutil.rmtree(work, ignore_errors=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
