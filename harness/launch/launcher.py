"""One resource vocabulary (ranks, threads per rank, nodes) rendered to a launch command.

``mpiexec`` (the default) runs a one-rank case as a plain local process and a multi-rank
case under ``mpiexec -n R`` from the venv. ``srun`` starts every case as a job step of the
current Slurm allocation (``--ntasks``, ``--cpus-per-task``, ``--nodes``). Extra launcher
arguments (``--mpi=pmi2``, a binding policy) are passed through as given.
"""
from __future__ import annotations

import pathlib
from dataclasses import dataclass

from harness.hardware.fingerprint import usable_cpus
from harness.launch.mpi import find_mpiexec, mpi_command
from harness.launch.slurm import find_srun, in_allocation, srun_command

LAUNCHERS = ("mpiexec", "srun")


@dataclass(frozen=True)
class Launcher:
    """How ``harness run`` starts each case's worker."""

    kind: str = "mpiexec"
    nodes: int | None = None
    extra_args: tuple[str, ...] = ()

    def usage_problem(self) -> str | None:
        """Why these settings make no sense anywhere (an unknown kind, srun options without srun)."""
        if self.kind not in LAUNCHERS:
            return f"--launcher {self.kind}: choose one of {', '.join(LAUNCHERS)}"
        if self.nodes is not None and self.nodes < 1:
            return f"--nodes {self.nodes}: must be >= 1"
        if self.kind != "srun" and (self.nodes is not None or self.extra_args):
            return "--nodes and --launcher-arg only apply to --launcher srun"
        return None

    def problem(self) -> str | None:
        """Why this launcher cannot be used here and now (checked once, before any case)."""
        if self.usage_problem():
            return self.usage_problem()
        if self.kind == "srun":
            if find_srun() is None:
                return "--launcher srun: srun is not on PATH; run inside a Slurm allocation"
            if not in_allocation():
                return ("--launcher srun needs a Slurm allocation (SLURM_JOB_ID is unset): "
                        "use `harness submit` to make one, or salloc")
        return None

    def skip_reason(self, ranks: int) -> str | None:
        """Why a case with ``ranks`` ranks cannot be launched, or None."""
        if self.kind == "mpiexec" and ranks > 1 and find_mpiexec() is None:
            return f"{ranks} ranks need mpiexec: pip install 'hpml-harness[mpi]'"
        return None

    def command(self, ranks: int, threads: int, argv: list[str]) -> tuple[list[str], dict[str, str], str]:
        """(command line, extra environment, launcher name recorded)."""
        if self.kind == "srun":
            srun = find_srun()
            assert srun is not None, "checked by problem()"
            return srun_command(srun, ranks, threads, self.nodes, list(self.extra_args), argv), {}, "srun"
        if ranks == 1:
            return list(argv), {}, "local"
        mpiexec = find_mpiexec()
        assert mpiexec is not None, "checked by skip_reason()"
        cmd, env = mpi_command(mpiexec, ranks, argv, usable_cpus())
        return cmd, env, "mpiexec"


def worker_argv(python: str, spec_path: pathlib.Path | str) -> list[str]:
    """The worker's own command line, which every launcher wraps."""
    return [python, "-m", "harness.worker", str(spec_path)]
