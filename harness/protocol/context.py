"""What a workload sees while it runs: its parameters, the phase clock and the communicator."""
from __future__ import annotations

import math
import pathlib
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from harness.protocol.comm import ProfiledComm
from harness.protocol.phases import PhaseClock, _Phase


@dataclass
class RunContext:
    """Handed to ``Workload.setup``, ``run`` and ``teardown``.

    ``comm`` is a :class:`ProfiledComm` over the case's MPI communicator (a real
    single-process communicator when the case has one rank). ``state`` is a free dict
    for the workload to keep data between setup and repeats.
    """

    params: dict[str, Any]
    size: str
    threads: int
    artifact_dir: pathlib.Path
    clock: PhaseClock
    backend: str | None = None
    backend_impl: Any = None
    profile: dict[str, Any] = field(default_factory=dict)   # the matched profile's data, or {}
    profile_dirs: list[pathlib.Path] = field(default_factory=list)  # every registered profile folder
    # This machine's CPU peaks for the case's cores (harness.hardware.peaks.machine_peaks): a
    # profile's only when it is this SKU, else derived from the core and clock, else none and why.
    peaks: dict[str, Any] = field(default_factory=dict)
    repeat: int = 0    # index of the measured repeat (counting on across --until-decided rounds); warmups < 0
    warmup: bool = False
    state: dict[str, Any] = field(default_factory=dict)
    _comm: ProfiledComm | None = None
    _comm_error: str = ""
    _replicates: dict[str, dict[str, float]] = field(default_factory=dict)

    @property
    def comm(self) -> ProfiledComm:
        if self._comm is None:
            raise RuntimeError(self._comm_error or "no MPI communicator in this case")
        return self._comm

    @property
    def rank(self) -> int:
        return self._comm.rank if self._comm is not None else 0

    @property
    def nranks(self) -> int:
        return self._comm.size if self._comm is not None else 1

    @property
    def is_root(self) -> bool:
        return self.rank == 0

    @property
    def device(self) -> str:
        """Where a torch workload puts its model and batches: ``"cuda"`` under the cuda backend
        (which then verifies that memory was allocated there), else ``"cpu"``."""
        return "cuda" if self.backend == "cuda" else "cpu"

    @property
    def blas(self) -> Any | None:
        """The requested backend's direct BLAS binding (``gemm(a, b, c)``), or None."""
        return self.backend_impl.blas() if self.backend_impl is not None else None

    def phase(self, name: str) -> _Phase:
        """``with ctx.phase("compute"):`` charges the block's time to ``compute``."""
        return self.clock.phase(name)

    def count_work(self, phase: str, flops: float, nbytes: float = 0.0) -> None:
        """Count ``flops`` floating-point operations (and ``nbytes`` bytes moved to and from memory,
        where known) to ``phase`` in this repeat: the record gives the phase's achieved GFLOP/s and
        its fraction of the machine's peak and measured GEMM ceiling. Count what the framework or
        the kernel says it computed (:func:`harness.torch_flops`, a per-layer count), once per step,
        and declare how in ``Workload.work_counts``."""
        if not (math.isfinite(flops) and math.isfinite(nbytes)) or flops < 0 or nbytes < 0:
            raise ValueError(f"count_work({phase!r}): flops and bytes must be finite and >= 0, not {flops!r}, {nbytes!r}")
        self.clock.add_work(phase, float(flops), float(nbytes))

    def replicates(self, metric: str, values: Mapping[Any, float]) -> None:
        """Report ``metric``'s value per seed or split of this repeat, ``{seed: value}``: the
        replicates its claims' intervals are built from (declare ``variation = {metric:
        "seeds"}``). Cases that report the same ids are paired: same seeds, same splits."""
        self._replicates[str(metric)] = {str(k): float(v) for k, v in values.items()}

    def log(self, message: str) -> None:
        """A progress line on stderr, prefixed with the rank (the parent keeps the tail)."""
        print(f"[rank {self.rank}] {message}", file=sys.stderr, flush=True)
