"""What the parent and the worker of one case exchange, defined once for both sides.

The parent writes a :class:`WorkerSpec` into the case folder and launches the worker; rank 0
of the worker writes a :class:`WorkerResult` beside it, or any rank that raises writes its
traceback to its error file. :class:`CaseFiles` names those files.
"""
from __future__ import annotations

import dataclasses
import json
import os
import pathlib
from dataclasses import dataclass, field
from typing import Any

from harness.backend import Verification   # the backend's verdict, as the worker reports it


@dataclass(frozen=True)
class CaseFiles:
    """The files of one case's work folder."""

    folder: pathlib.Path

    @property
    def spec(self) -> pathlib.Path:
        return self.folder / "spec.json"

    @property
    def result(self) -> pathlib.Path:
        return self.folder / "result.json"

    def error(self, rank: int | str) -> pathlib.Path:
        """Where rank ``rank`` writes its traceback when it raises."""
        return self.folder / f"rank{rank}.error"

    def errors(self) -> list[tuple[str, pathlib.Path]]:
        """(rank, path) of every error file, in rank order."""
        found = [(p.name.removeprefix("rank").removesuffix(".error"), p) for p in self.folder.glob("rank*.error")]
        return sorted(found, key=lambda rp: (len(rp[0]), rp[0]))

    def succeeded(self) -> bool:
        """A result and no error file: the folder may be removed after the record is written."""
        return self.result.is_file() and not self.errors()


@dataclass
class WorkerSpec:
    """Everything the worker needs to run one case (the parent's half of the exchange)."""

    workload: str
    backend: str | None
    plugins: list[str]
    params: dict[str, Any]
    size: str
    ranks: int
    threads: int
    repeats: int
    warmup: int
    case_dir: str
    artifact_dir: str
    profile: dict[str, Any] = field(default_factory=dict)
    profile_dirs: list[str] = field(default_factory=list)
    peaks: dict[str, Any] = field(default_factory=dict)   # harness.hardware.peaks for the case's cores
    pmpi_hook: str | None = None
    first_repeat: int = 0    # ctx.repeat of the first measured repeat: rounds of --until-decided go on counting

    @property
    def files(self) -> CaseFiles:
        return CaseFiles(pathlib.Path(self.case_dir))

    def write(self) -> pathlib.Path:
        self.files.spec.write_text(json.dumps(dataclasses.asdict(self)))
        return self.files.spec

    @classmethod
    def read(cls, path: pathlib.Path | str) -> WorkerSpec:
        return cls(**json.loads(pathlib.Path(path).read_text()))


@dataclass
class WorkerResult:
    """What rank 0 of the worker reports (the worker's half of the exchange).

    ``ranks`` holds each rank's figures: ``rank``, ``host``, ``pid``, ``samples`` (seconds per
    measured repeat), ``phases`` (per repeat: name -> seconds, count), ``comm`` (op -> calls,
    bytes, seconds), ``setup_s``, ``cpu_s``, ``peak_rss_bytes``."""

    ranks: list[dict[str, Any]]
    metrics: dict[str, Any]
    metric_samples: dict[str, list[Any]]
    verification: Verification
    verification_per_rank_ok: list[bool]
    mpi_library: str | None = None
    replicates: dict[str, dict[str, float]] = field(default_factory=dict)   # metric -> seed id -> value
    allreduce_profiler: str | None = None
    allreduce_profiler_note: str = ""

    def write(self, files: CaseFiles) -> None:
        """Atomically: the parent never sees half a result."""
        tmp = files.result.with_suffix(".tmp")
        tmp.write_text(json.dumps(dataclasses.asdict(self)))
        os.replace(tmp, files.result)

    @classmethod
    def read(cls, files: CaseFiles) -> WorkerResult:
        data = json.loads(files.result.read_text())
        data["verification"] = Verification(**data["verification"])
        return cls(**data)
