"""A minimal external workload: a blocked matrix product, data-parallel over MPI ranks."""
import time

import numpy as np

from harness import Claim, Control, Param, Workload, hookimpl


class BlockMatmul(Workload):
    name = "example_matmul"
    paper = "none: an example plugin"
    frameworks = ("numpy", "mpi")          # what a --backend must be able to drive
    params = {"n": Param(int, default=512, minimum=16, maximum=16384, help="matrix order"),
              "corrupt": Param(bool, default=False, help="control: rank 0 multiplies by a wrong B"),
              "seed": Param(int, default=0, minimum=0)}
    sizes = {"smoke": {"n": 128}, "small": {"n": 512}, "paper": {"n": 4096}}
    throughput = ("gflops", "GFLOP/s")      # the headline rate in reports and `harness show`
    variation = {"checksum_ok": "exact"}    # deterministic: its interval is the point (timings vary by repeat)
    claims = [Claim("checksum_ok", "==", 1, paper_value=1, source="the maths",
                    control=Control({"corrupt": True}, "a wrong B on rank 0: the checksum must not match"))]

    def setup(self, ctx):                   # untimed: make data, keep it in ctx.state
        n = ctx.params["n"]
        rng = np.random.default_rng(ctx.params["seed"])
        a, b = rng.standard_normal((n, n)), rng.standard_normal((n, n))
        expected = float((a @ b).sum())
        if ctx.params["corrupt"] and ctx.rank == 0:
            b = b + 1.0
        rows = np.array_split(np.arange(n), ctx.nranks)[ctx.rank]
        ctx.state.update(a=a[rows], b=b, expected=expected)

    def run(self, ctx):                     # one repeat: timed, repeated, phases per rank
        s, n = ctx.state, ctx.params["n"]
        t0 = time.perf_counter()
        with ctx.phase("compute"):
            local = np.array([(s["a"] @ s["b"]).sum()])
        total = np.zeros(1)
        ctx.comm.Allreduce(local, total)    # profiled: calls, bytes, time, charged to "comm"
        return {"checksum_ok": int(np.isclose(total[0], s["expected"], rtol=1e-6)),
                "gflops": 2.0 * n**3 / (time.perf_counter() - t0) / 1e9}


@hookimpl
def harness_workloads():
    return [BlockMatmul()]
