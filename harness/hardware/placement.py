"""Where a workload's compute phase stands on its machine: the achieved rate of the work it counted
against the machine's peak and its measured GEMM ceiling, in the phase's precision.

"Is this node slow at the workload, or is the workload not using the node?" The peak comes from
:func:`harness.hardware.peaks.machine_peaks` for the cores the case used (a profile's, or derived
from the measured clock); the GEMM ceiling is the best GEMM rate a ceiling workload (the roofline,
``Workload.ceilings`` in GFLOP/s) measured on this machine in the same run, scaled from the cores it
used to the case's (GEMM rates scale with cores to within the noise on the machines here; the note
says when it was scaled). A phase above its measured GEMM ceiling is printed as it is: the workload's
library (torch's MKL, oneDNN) can beat the library that measured the ceiling, and the note names both.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from harness.hardware.peaks import fraction_or_problem


@dataclass(frozen=True)
class GemmCeiling:
    """One measured GEMM rate of this machine: GFLOP/s on ``cores`` cores, and what measured it."""

    gflops: float
    cores: int
    source: str   # e.g. "roofline record 5004dd21 (numpy's OpenBLAS 0.3.30, 2 cores)"


def gemm_ceilings(records: Iterable[Any], machine_key: str) -> dict[str, GemmCeiling]:
    """The latest ok GFLOP/s ceiling per precision ("fp64", "fp32") among ``records`` (typed
    records) of the machine ``machine_key``; a ceiling metric names its precision as a suffix
    (``peak_gflops_fp64``)."""
    out: dict[str, tuple[str, GemmCeiling]] = {}
    for r in records:
        if not r.ok or r.machine_key != machine_key or not r.workload.ceilings:
            continue
        for metric, unit in r.workload.ceilings.items():
            dtype = metric.rsplit("_", 1)[-1]
            value = r.number(metric)
            if unit != "GFLOP/s" or dtype not in ("fp64", "fp32") or value is None or value <= 0:
                continue
            cores = max(1, r.launch.ranks * r.launch.threads)
            library = (r.backend.library or "").split(" (")[0][:48] or _default_blas(r.backend.evidence)
            ceiling = GemmCeiling(value, cores, f"{r.workload.name} record {r.id[:8]} ({library}, {cores} core(s))")
            if dtype not in out or r.created >= out[dtype][0]:
                out[dtype] = (r.created, ceiling)
    return {dtype: ceiling for dtype, (_, ceiling) in out.items()}


def _default_blas(evidence: Any) -> str:
    """The BLAS threadpoolctl saw first in the case's process (no backend requested), e.g. "openblas 0.3.31"."""
    pools = (evidence or {}).get("threadpool_info") if isinstance(evidence, dict) else None
    blas = next((p for p in pools or [] if isinstance(p, dict) and p.get("user_api") == "blas"), None)
    return f"{blas.get('internal_api')} {blas.get('version') or ''}".strip() if blas else "the default BLAS"


def place_phases(phases: Mapping[str, Any], work_counts: Mapping[str, tuple[str, str]], peaks: Mapping[str, Any],
                 ceilings: Mapping[str, GemmCeiling], cores: int) -> None:
    """Fill each counted phase's precision, how it was counted, and its fractions of the peak
    and of the GEMM ceiling (in place; ``phases`` are :class:`harness.results.record.PhaseStats`)."""
    for name, phase in phases.items():
        if phase.gflops is None:
            continue
        dtype, how = work_counts.get(name, ("", "counted by the workload (not declared in work_counts)"))
        phase.dtype, phase.counted_by = dtype or None, how
        notes = []
        if not dtype:
            notes.append("no precision declared: not placed against a peak or ceiling")
        else:
            peak = peaks.get(f"{dtype}_gflops")
            fraction, problem = fraction_or_problem(phase.gflops, peak, f"{peaks.get('source') or ''} {dtype} peak".strip())
            phase.fraction_of_peak = fraction
            if problem or peak is None:
                notes.append(problem or f"no {dtype} peak: {peaks.get('how') or 'unknown core'}")
            ceiling = ceilings.get(dtype)
            if ceiling is None:
                notes.append(f"no {dtype} GEMM ceiling measured on this machine in this run "
                             "(run the roofline workload with it, as suite all does)")
            else:
                scaled = ceiling.gflops * cores / ceiling.cores
                phase.fraction_of_gemm_ceiling = phase.gflops / scaled
                notes.append(f"{dtype} GEMM ceiling {scaled:.4g} GFLOP/s from {ceiling.source}"
                             + (f", scaled to {cores} core(s)" if cores != ceiling.cores else ""))
        phase.placement_note = "; ".join(notes)
