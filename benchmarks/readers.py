"""How the readers scale: `harness show`, `report` (md, html, csv), `compare` and `history` over a results
file of N records, each verb's wall time and peak memory (the summed RSS of its process tree, the pool of
parsing processes included, sampled every 250 ms).

    .venv/bin/python benchmarks/readers.py --records 100000 [--work DIR] [--keep]
    .venv/bin/python benchmarks/readers.py --records 3000 --machines 3000     # many machines side by side

The records are the real ones committed under tests/fixtures/records (an H200 node's and a
CPU machine's), copied with new ids, run ids and a swept ``seed`` param so that cases differ;
`compare` gets half of them on each side. Issue 24's targets on a 2-core machine: every verb
under 60 s and 1 GiB for 100,000 records. Exit status 1 when one misses them.
"""
from __future__ import annotations

import argparse
import json
import pathlib
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
SOURCES = [ROOT / "tests/fixtures/records/gpu-node/results.jsonl",
           ROOT / "tests/fixtures/records/cross-arch/x86_64/results.jsonl"]
LIMIT_S, LIMIT_MIB = 60.0, 1024.0

# Runs one command and prints its wall time and the peak of its process tree's summed PSS (the
# pool of parsing processes included; PSS splits the pages a fork shares), sampled every 250 ms.
WRAPPER = """
import subprocess, sys, tempfile, time
import psutil
err = tempfile.TemporaryFile(mode="w+")
t = time.perf_counter()
proc = subprocess.Popen(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=err, text=True)
top, peak = psutil.Process(proc.pid), 0
while proc.poll() is None:
    try:
        tree = [top] + top.children(recursive=True)
        peak = max(peak, sum(p.memory_full_info().pss for p in tree if p.is_running()))
    except psutil.Error:
        pass
    time.sleep(0.25)
print(proc.returncode, time.perf_counter() - t, peak / 2**20)
err.seek(0)
sys.stderr.write(err.read()[-2000:])
"""


def write_records(path: pathlib.Path, n: int, offset: int = 0, machines: int = 0) -> None:
    """``n`` records; with ``machines`` > 0, record i on machine i % machines (its own key and label):
    how a report scales with the machines side by side (issue 44: linear, not quadratic)."""
    base = [json.loads(line) for src in SOURCES for line in src.read_text().splitlines() if line.strip()]
    with open(path, "w") as f:
        for i in range(offset, offset + n):
            rec = dict(base[i % len(base)])
            if machines:
                m = i % machines
                hardware = dict(rec["hardware"])     # a machine is its facts: another CPU model, another machine
                hardware["cpu"] = dict(hardware.get("cpu") or {}, model=f"bench CPU {m}")
                rec["hardware"] = hardware
            rec["id"] = f"{i:016x}"
            rec["run_id"] = f"bench-{i // 500}"
            seed = i // len(base) % 50          # 50 values: cases repeat, as runs of a history do
            rec["swept"] = dict(rec.get("swept") or {}, seed=seed)
            rec["case_id"] = f"{rec['case_id']}#seed{seed}"
            f.write(json.dumps(rec, separators=(",", ":")) + "\n")


def measure(argv: list[str]) -> tuple[int, float, float, str]:
    r = subprocess.run([sys.executable, "-c", WRAPPER, *argv], capture_output=True, text=True)
    code, seconds, mib = r.stdout.split()
    return int(code), float(seconds), float(mib), r.stderr


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--records", type=int, default=100_000)
    ap.add_argument("--work", help="folder for the generated files (default: a temporary one)")
    ap.add_argument("--keep", action="store_true", help="keep the generated files")
    ap.add_argument("--reuse", action="store_true", help="use the files a --keep run left in --work")
    ap.add_argument("--machines", type=int, default=0,
                    help="spread the records over this many machines (default: the sources' own)")
    args = ap.parse_args()
    work = pathlib.Path(args.work or tempfile.mkdtemp(prefix="harness-readers-"))
    work.mkdir(parents=True, exist_ok=True)
    t = time.perf_counter()
    all_file, half_a, half_b = work / "all.jsonl", work / "a.jsonl", work / "b.jsonl"
    if not (args.reuse and all_file.exists() and half_a.exists() and half_b.exists()):
        write_records(all_file, args.records, machines=args.machines)
        write_records(half_a, args.records // 2, machines=args.machines)
        write_records(half_b, args.records - args.records // 2, offset=args.records // 2, machines=args.machines)
    size = all_file.stat().st_size / 2**20
    print(f"{args.records} records, {size:.0f} MiB, written in {time.perf_counter() - t:.0f} s -> {work}")
    harness = [sys.executable, "-m", "harness"]
    verbs = {
        "show": harness + ["show", str(all_file)],
        "report md": harness + ["report", str(all_file), "--out", str(work / "r.md")],
        "report html": harness + ["report", str(all_file), "--out", str(work / "r.html")],
        "report csv": harness + ["report", str(all_file), "--out", str(work / "r.csv")],
        "compare (half vs half)": harness + ["compare", str(half_a), str(half_b), "--json"],
        "history": harness + ["history", str(all_file), "--summary"],
    }
    missed = 0
    print(f"{'verb':24s} {'exit':>4s} {'seconds':>8s} {'peak MiB':>9s}")
    for name, argv in verbs.items():
        code, seconds, mib, err = measure(argv)
        ok = code in (0, 1) and seconds < LIMIT_S and mib < LIMIT_MIB
        missed += not ok
        print(f"{name:24s} {code:4d} {seconds:8.1f} {mib:9.0f}{'' if ok else '  MISSED'}")
        if code not in (0, 1):
            print("   " + err.strip().splitlines()[-1] if err.strip() else "   (no message)")
    if not args.keep and not args.work:
        for f in work.iterdir():
            f.unlink()
        work.rmdir()
    print(f"targets: under {LIMIT_S:.0f} s and {LIMIT_MIB:.0f} MiB per verb: "
          + ("all met" if not missed else f"{missed} missed"))
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
