"""The backend contract: a compute library that must prove it is the one that ran."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

# Frameworks that a workload lists but that no compute backend has to drive.
NON_COMPUTE_FRAMEWORKS = frozenset({"mpi", "python"})


@dataclass
class Verification:
    """What a backend found in the child process after the workload's imports.

    ``ok`` False fails the case: the requested library is not what runs. ``evidence``
    goes into the record verbatim; ``warnings`` (kernel downgrades, ...) are shown.
    """

    ok: bool
    evidence: dict[str, Any] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    reason: str = ""
    library: str = ""


class Backend:
    """Base class of every backend plugin.

    Lifecycle: in the parent, ``available()`` and ``can_drive()`` decide whether a case
    runs or is skipped with a reason; ``environment(threads)`` gives the child's extra
    environment. In the child, ``activate()`` runs before the workload's imports and
    ``verify()`` after the workload ran, returning evidence.
    """

    name: ClassVar[str] = ""
    description: ClassVar[str] = ""

    def frameworks(self) -> tuple[str, ...]:
        """Frameworks this backend can drive in this install (e.g. numpy, torch, blas)."""
        return ()

    def available(self) -> tuple[bool, str]:
        """(True, "") when usable here, else (False, why and what to do)."""
        return True, ""

    def can_drive(self, frameworks: tuple[str, ...]) -> str | None:
        """None when every compute framework of a workload is drivable, else the reason."""
        drivable = set(self.frameworks())
        missing = [f for f in frameworks if f not in drivable and f not in NON_COMPUTE_FRAMEWORKS]
        if missing:
            return (f"backend {self.name!r} cannot drive {', '.join(missing)} in this install "
                    f"(it drives: {', '.join(sorted(drivable)) or 'nothing'})")
        return None

    def environment(self, threads: int) -> dict[str, str]:
        """Extra environment variables for the child process (recorded with the case)."""
        return {}

    def describe(self) -> dict[str, Any]:
        """For ``harness info``: library path, version, warnings (may load the library). Default: {}."""
        return {}

    def blas(self) -> Any | None:
        """In the child: a binding with ``gemm(a, b, c)`` that calls this library directly
        (for workloads whose frameworks include "blas"), or None."""
        return None

    def activate(self) -> None:
        """Called in the child before the workload is set up (e.g. switch FlexiBLAS)."""

    # Set True by backends of asynchronous devices (GPUs): the phase clock and the repeat timer
    # then call ``synchronize`` at every boundary, so a phase measures the work its kernels did,
    # not the time to queue them.
    asynchronous: bool = False

    def synchronize(self) -> None:
        """In the child, for asynchronous backends: wait until the device has finished its queued work."""

    def verify(self) -> Verification:
        """Called in the child after the workload ran; must report which library really ran."""
        return Verification(ok=False, reason=f"backend {self.name!r} does not implement verify()")
