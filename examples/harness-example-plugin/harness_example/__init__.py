"""A minimal external workload: a blocked matrix product, data-parallel over MPI ranks.

Each rank multiplies its block of rows of A by B (timed as ``compute``), then the ranks
sum a checksum with Allreduce (profiled as ``comm`` by the harness).
"""
from __future__ import annotations

import numpy as np

from harness import Claim, Param, Workload, hookimpl


class BlockMatmul(Workload):
    name = "example_matmul"
    paper = "none: an example plugin"
    description = "C = A @ B with rows of A split over ranks; GFLOP/s reported"
    frameworks = ("numpy", "mpi")
    params = {
        "n": Param(int, default=512, minimum=16, maximum=16384, help="matrix order"),
        "seed": Param(int, default=0, minimum=0),
    }
    sizes = {"smoke": {"n": 128}, "small": {"n": 512}, "paper": {"n": 4096}}
    claims = [Claim("checksum_ok", "==", 1, paper_value=1, source="the maths")]

    def setup(self, ctx):
        n, rank, size = ctx.params["n"], ctx.rank, ctx.nranks
        rng = np.random.default_rng(ctx.params["seed"])
        a = rng.standard_normal((n, n))
        b = rng.standard_normal((n, n))
        rows = np.array_split(np.arange(n), size)[rank]
        ctx.state.update(a=a[rows], b=b, expected=float((a @ b).sum()))

    def run(self, ctx):
        s = ctx.state
        with ctx.phase("compute"):
            c = s["a"] @ s["b"]
            local = np.array([c.sum()])
        total = np.zeros(1)
        ctx.comm.Allreduce(local, total)
        n = ctx.params["n"]
        return {"checksum_ok": int(np.isclose(total[0], s["expected"], rtol=1e-6)),
                "flops": 2.0 * n**3}


@hookimpl
def harness_workloads():
    return [BlockMatmul()]
