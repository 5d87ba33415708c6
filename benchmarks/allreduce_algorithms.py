"""Which Allreduce algorithm does cnn_scaling's model pick per message size, and which one is
fastest when MPICH is made to run each of them?

MPICH chooses its intra-node Allreduce algorithm from ``MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM``
(with ``MPIR_CVAR_DEVICE_COLLECTIVES=none`` so that the generic algorithms run). This script
launches one ``mpiexec -n P`` per algorithm with the venv's mpiexec, times a message-size sweep
in each (median of ``--reps`` calls after a barrier, slowest rank), fits the model's alpha, beta
and gamma (``plugins/cnn_scaling/model.py``) to all of them at once (least squares on relative
error), and prints per size the measured fastest algorithm next to the model's pick, then the
share of sizes where they agree. ``--json FILE`` keeps everything.

MPICH's names for the model's algorithms: recursive_doubling = recursive doubling,
reduce_scatter_allgather = Rabenseifner, ring = ring, tree = binomial tree (reduce + broadcast;
MPICH's tree is k-ary and pipelined, so this pairing is approximate). With P = 2 Rabenseifner and
ring have the same model cost; the model's tie goes to the one listed first.

    python benchmarks/allreduce_algorithms.py                 # 2 ranks, 8 B .. 4 MiB
    python benchmarks/allreduce_algorithms.py --ranks 4 --max-kib 65536 --json out.json
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

MPICH_NAMES = {"recursive_doubling": "recursive_doubling", "rabenseifner": "reduce_scatter_allgather",
               "ring": "ring", "binomial": "tree"}


def worker(sizes: list[int], reps: int) -> None:
    """Inside mpiexec: time every size, print one JSON line from rank 0."""
    import statistics
    import time

    import numpy as np
    from mpi4py import MPI

    comm = MPI.COMM_WORLD
    out = []
    for nbytes in sizes:
        x = np.ones(max(1, nbytes // 4), dtype=np.float32)
        y = np.empty_like(x)
        for _ in range(3):
            comm.Allreduce(x, y)
        times = []
        for _ in range(reps):
            comm.Barrier()
            t0 = time.perf_counter()
            comm.Allreduce(x, y)
            times.append(time.perf_counter() - t0)
        out.append(comm.allreduce(statistics.median(times), op=MPI.MAX))
    if comm.rank == 0:
        print(json.dumps(out))


def measure(mpiexec: str, ranks: int, algorithm: str, sizes: list[int], reps: int) -> list[float]:
    env = dict(os.environ, MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM=MPICH_NAMES[algorithm],
               MPIR_CVAR_DEVICE_COLLECTIVES="none", OMP_NUM_THREADS="1")
    cmd = [mpiexec, "-n", str(ranks), sys.executable, __file__, "--worker",
           "--sizes", ",".join(map(str, sizes)), "--reps", str(reps)]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600, check=False)
    if proc.returncode != 0:
        raise SystemExit(f"{algorithm}: mpiexec failed ({proc.returncode}): {proc.stderr[-500:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def fit(measured: dict[str, list[float]], sizes: list[int], ranks: int):
    """alpha, beta, gamma of the model from every algorithm's times at once."""
    import numpy as np

    from harness_plugins.cnn_scaling.model import Network, allreduce_time

    rows, target = [], []
    for algorithm, times in measured.items():
        for n, t in zip(sizes, times):
            # the model is linear in (alpha, beta, gamma): read its coefficients off unit networks
            coef = [allreduce_time(n, ranks, Network(*unit), algorithm) for unit in
                    ((1.0, 0.0, 0.0), (0.0, 1.0, 0.0), (0.0, 0.0, 1.0))]
            rows.append(np.array(coef) / t)
            target.append(1.0)
    solution, *_ = np.linalg.lstsq(np.array(rows), np.array(target), rcond=None)
    alpha, beta, gamma = (max(v, 0.0) for v in solution)
    return Network(alpha=alpha, beta=beta, gamma=gamma)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ranks", type=int, default=2)
    ap.add_argument("--max-kib", type=int, default=4096, help="largest message (KiB)")
    ap.add_argument("--reps", type=int, default=30)
    ap.add_argument("--json", help="write sizes, times, fitted model and picks here")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--sizes", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        worker([int(s) for s in args.sizes.split(",")], args.reps)
        return 0
    if args.ranks < 2 or args.max_kib < 1 or args.reps < 1:
        ap.error("--ranks must be >= 2, --max-kib and --reps >= 1")

    from harness.launch.mpi import find_mpiexec
    from harness_plugins.cnn_scaling.model import allreduce_time, best_allreduce

    mpiexec = find_mpiexec()
    if mpiexec is None:
        print("allreduce_algorithms: no mpiexec in the venv: pip install 'hpml-harness[mpi]'", file=sys.stderr)
        return 2
    sizes = [2**i for i in range(3, (args.max_kib * 1024).bit_length())]
    measured = {a: measure(mpiexec, args.ranks, a, sizes, args.reps) for a in MPICH_NAMES}
    net = fit(measured, sizes, args.ranks)
    rows, agree = [], 0
    for i, n in enumerate(sizes):
        fastest = min(MPICH_NAMES, key=lambda a: measured[a][i])
        pick = best_allreduce(n, args.ranks, net)[0]
        same = pick == fastest or measured[pick][i] <= 1.05 * measured[fastest][i]  # within 5 %: a tie
        agree += same
        rows.append({"bytes": n, "measured_us": {a: measured[a][i] * 1e6 for a in MPICH_NAMES},
                     "model_us": {a: allreduce_time(n, args.ranks, net, a) * 1e6 for a in MPICH_NAMES},
                     "fastest": fastest, "model_pick": pick, "agree": bool(same)})
    print(f"{args.ranks} ranks, MPICH algorithms forced with MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM; model fitted "
          f"to all: alpha {net.alpha * 1e6:.2f} us, beta {net.beta * 1e9:.3f} ns/B, gamma {net.gamma * 1e9:.3f} ns/B")
    print(f"{'bytes':>9}  " + "  ".join(f"{a[:12]:>12}" for a in MPICH_NAMES) + "   fastest        model pick")
    for r in rows:
        print(f"{r['bytes']:>9}  " + "  ".join(f"{r['measured_us'][a]:>10.1f}us" for a in MPICH_NAMES)
              + f"   {r['fastest']:<14} {r['model_pick']}{'' if r['agree'] else '   (differs)'}")
    print(f"the model's pick is the fastest (or within 5 % of it) at {agree} of {len(sizes)} sizes")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"ranks": args.ranks, "alpha_s": net.alpha, "beta_s_per_byte": net.beta,
                       "gamma_s_per_byte": net.gamma, "rows": rows, "agree": agree}, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
