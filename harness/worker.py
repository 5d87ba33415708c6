"""The child process that runs one case: ``python -m harness.worker SPEC.json``.

Under ``mpiexec -n R`` every rank runs this module. Each rank times its repeats and
phases; rank 0 gathers the per-rank figures and writes one result JSON for the parent.
A rank that raises writes its traceback beside the result and aborts the job, so the
parent records the case as failed with the reason instead of waiting on a hang.
"""
from __future__ import annotations

import dataclasses
import os
import pathlib
import resource
import socket
import sys
import time
import traceback
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from harness.backend import Verification
from harness.casefiles import WorkerResult, WorkerSpec
from harness.protocol.comm import ProfiledComm
from harness.progress import PROGRESS_NAME, ProgressWriter
from harness.protocol.context import RunContext
from harness.protocol.energy import activate, energy_meter
from harness.protocol.phases import PhaseClock
from harness.protocol.repeats import measure_repeats
from harness.protocol.pmpi import AllreduceHook, attach_hook, load_hook

if TYPE_CHECKING:
    from harness.backend import Backend


def _generic_evidence() -> dict[str, Any]:
    """What ran when no backend was requested: the thread pools threadpoolctl sees."""
    try:
        import threadpoolctl
    except ImportError:
        return {"threadpool_info": None, "note": "threadpoolctl is not installed"}
    return {"threadpool_info": threadpoolctl.threadpool_info()}


def _mpi_world(ranks: int, hook_path: str | None) -> tuple[Any, str, AllreduceHook | None, str]:
    """(COMM_WORLD or None, why no MPI, the PMPI hook or None, why no hook)."""
    hook_note = load_hook(hook_path)
    try:
        from mpi4py import MPI
    except ImportError as exc:
        if ranks > 1:
            raise
        return None, f"mpi4py is not usable here ({exc}): pip install 'hpml-harness[mpi]'", None, ""
    world = MPI.COMM_WORLD
    if world.Get_size() != ranks:
        raise RuntimeError(
            f"asked for {ranks} ranks but MPI started {world.Get_size()}: the mpiexec used "
            "does not belong to the MPI library mpi4py loads")
    hook = None
    if not hook_note:
        hook, hook_note = attach_hook(hook_path, MPI)
    return world, "", hook, hook_note


def _mpi_library() -> str | None:
    try:
        from mpi4py import MPI
        return MPI.Get_library_version().strip().splitlines()[0]
    except Exception:  # noqa: BLE001
        return None


SLURM_KEYS = ("SLURM_JOB_ID", "SLURM_STEP_ID", "SLURM_PROCID", "SLURM_LOCALID", "SLURM_NODEID",
              "SLURMD_NODENAME", "SLURM_JOB_NODELIST", "SLURM_STEP_NODELIST", "SLURM_NTASKS",
              "SLURM_CPUS_PER_TASK", "SLURM_MPI_TYPE", "SLURM_CLUSTER_NAME")


def placement() -> dict[str, Any]:
    """Where this rank ran: its IPv4 addresses (from the interfaces, not the resolver), the Slurm
    job, step and node it belongs to, the process-management interface that wired it up, and how
    its links are shaped (qdisc, NFQUEUE)."""
    from harness.hardware.network import links, nfqueues

    nics = links()
    addresses = sorted(a for nic in nics for a in nic["addresses"])
    env = os.environ
    if "PMIX_RANK" in env:
        pmi = "PMIx" + (" (srun)" if "SLURM_STEP_ID" in env else "")
    elif "SLURM_STEP_ID" in env and ("PMI_FD" in env or "PMI_RANK" in env):
        pmi = f"Slurm's {env.get('SLURM_MPI_TYPE') or 'PMI'} (srun --mpi)"
    elif "PMI_FD" in env or "PMI_RANK" in env:
        pmi = "Hydra's PMI (mpiexec)"
    elif "OMPI_COMM_WORLD_RANK" in env:
        pmi = "Open MPI runtime (mpirun)"
    else:
        pmi = None
    return {"addresses": addresses, "slurm": {k: env[k] for k in SLURM_KEYS if k in env}, "pmi": pmi,
            "links": nics, "nfqueues": nfqueues()}


def node_reader(world: Any, rank: int) -> bool:
    """True for the rank that reads this node's energy: the lowest rank on its host (energy
    counters are node-level, so one reader per node, and every node has one)."""
    if world is None:
        return True
    hosts = world.allgather(socket.gethostname())
    return hosts.index(hosts[rank]) == rank


def device_sync(backend: Backend | None) -> Callable[[], None] | None:
    """The backend's synchronize where its device runs asynchronously (a GPU), else None."""
    return backend.synchronize if backend is not None and backend.asynchronous else None


def run_case(spec: WorkerSpec) -> None:
    from harness.registry import build_registry

    world, comm_error, hook, hook_note = _mpi_world(spec.ranks, spec.pmpi_hook)
    rank = world.Get_rank() if world is not None else 0
    registry = build_registry(only=set(spec.plugins))
    workload = registry.workload(spec.workload)
    backend = registry.backend(spec.backend) if spec.backend else None

    clock = PhaseClock(sync=device_sync(backend))
    comm = ProfiledComm(world, clock, hook) if world is not None else None
    artifact_dir = pathlib.Path(spec.artifact_dir)
    if rank == 0:
        artifact_dir.mkdir(parents=True, exist_ok=True)
    ctx = RunContext(params=spec.params, size=spec.size, threads=spec.threads,
                     artifact_dir=artifact_dir, clock=clock, backend=spec.backend,
                     backend_impl=backend, profile=spec.profile or {},
                     profile_dirs=[pathlib.Path(d) for d in spec.profile_dirs], peaks=spec.peaks or {},
                     _comm=comm, _comm_error=comm_error)

    progress = (ProgressWriter(spec.files.folder / PROGRESS_NAME, lambda: clock._stack[-1] if clock._stack else None)
                if rank == 0 else None)
    try:
        _measure(spec, world, rank, workload, backend, clock, comm, ctx, progress, hook_note)
    finally:
        if progress is not None:
            progress.close()


def _measure(spec: WorkerSpec, world: Any, rank: int, workload: Any, backend: Backend | None, clock: PhaseClock,
             comm: ProfiledComm | None, ctx: RunContext, progress: ProgressWriter | None, hook_note: str) -> None:
    """Setup, the warmup and measured repeats, teardown and verification; rank 0 writes the result."""
    if backend is not None:
        backend.activate()
    t_setup = time.perf_counter()
    workload.setup(ctx)
    setup_s = time.perf_counter() - t_setup
    clock.take()

    on_device = backend is not None and backend.asynchronous   # a GPU backend: its energy counts
    meter, energy = (energy_meter(gpus_used=on_device, reader=f"rank {rank}") if node_reader(world, rank)
                     else (None, {}))
    if meter is not None:
        meter.start()
        clock.meter = meter
    activate(meter)
    done = measure_repeats(workload, ctx, warmup=spec.warmup, repeats=spec.repeats, first_repeat=spec.first_repeat,
                           world=world, comm=comm, meter=meter, progress=progress)
    if progress is not None:
        progress.stage("teardown and verification")
    workload.teardown(ctx)

    if backend is not None:
        v = backend.verify()
        verification = dataclasses.replace(v, ok=bool(v.ok), warnings=list(v.warnings))   # JSON-ready
    else:
        verification = Verification(ok=True, reason="no backend requested", evidence=_generic_evidence())

    mine = {
        "rank": rank,
        "host": socket.gethostname(),
        "pid": os.getpid(),
        "samples": done.samples,
        "phases": done.phases,
        "comm": comm.profile() if comm is not None else {},
        "setup_s": setup_s,
        "cpu_s": done.cpu_s,
        "peak_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
        "energy": meter.result() if meter is not None else energy,
        "placement": placement(),
    }
    per_rank = world.gather(mine, root=0) if world is not None else [mine]
    verifications = world.gather(verification, root=0) if world is not None else [verification]
    if rank != 0:
        return
    WorkerResult(
        ranks=per_rank, metrics=done.metrics, metric_samples=done.metric_samples,
        replicates=done.replicate_means(),
        verification=verifications[0],
        verification_per_rank_ok=[bool(v.ok) for v in verifications], mpi_library=_mpi_library(),
        allreduce_profiler=comm.profiler if comm is not None else None,
        allreduce_profiler_note=hook_note if comm is not None else "",
    ).write(spec.files)


MAX_ERROR_CHARS = 16 * 1024


def error_text(text: str) -> str:
    """A traceback fit to be written and recorded: a lone surrogate escaped (it cannot be encoded),
    and a huge exception message cut to its head and tail (the last line says what was raised)."""
    text = text.encode("utf-8", "backslashreplace").decode("utf-8")
    if len(text) <= MAX_ERROR_CHARS:
        return text
    half = MAX_ERROR_CHARS // 2
    return f"{text[:half]}\n... [cut: {len(text) - 2 * half} characters] ...\n{text[-half:]}"


def main(argv: list[str]) -> int:
    spec = WorkerSpec.read(argv[1])
    try:
        run_case(spec)
    except BaseException:  # noqa: BLE001 - report everything, including SystemExit from plugins
        rank = (os.environ.get("PMI_RANK") or os.environ.get("OMPI_COMM_WORLD_RANK")
                or os.environ.get("SLURM_PROCID") or "0")
        text = error_text(traceback.format_exc())
        spec.files.error(rank).write_text(text, encoding="utf-8")
        sys.stderr.write(text)
        sys.stderr.flush()
        if spec.ranks > 1:
            try:
                from mpi4py import MPI
                MPI.COMM_WORLD.Abort(3)
            except Exception:  # noqa: BLE001
                pass
        return 3
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
