"""The repeat loop: one for `harness run`'s worker and for :func:`harness.testing.run_once`.

Warmup repeats, then measured ones: before each, the ranks meet at a barrier (where there is a
communicator) and the phase clock is taken, so what ran between repeats is no repeat's; at the
first measured repeat the communication profile is reset and the CPU clock started. Each measured
repeat keeps its wall seconds, its phases, its numeric metrics and what the workload reported with
``ctx.replicates`` (per metric and id, a value per repeat), and, where this rank reads energy,
the meter keeps the repeat's joules. One loop, so a plugin's unit tests exercise the protocol that
makes its records.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from harness.output.safe_text import surrogate_paths


@dataclass
class Measured:
    """What the measured repeats of one rank gave."""

    samples: list[float] = field(default_factory=list)                        # wall seconds per repeat
    phases: list[dict[str, dict[str, float]]] = field(default_factory=list)   # per repeat
    metrics: dict[str, Any] = field(default_factory=dict)                     # the last repeat's
    metric_samples: dict[str, list[Any]] = field(default_factory=dict)        # numeric metrics per repeat
    replicates: dict[str, dict[str, list[float]]] = field(default_factory=dict)   # metric -> id -> per repeat
    cpu_s: float = 0.0                                                        # CPU seconds of the measured repeats

    def replicate_means(self) -> dict[str, dict[str, float]]:
        """The replicates as a record keeps them: the same seed in several repeats is one
        replicate (its mean), not several."""
        return {k: {rid: sum(v) / len(v) for rid, v in by_id.items() if v} for k, by_id in self.replicates.items()}


def measure_repeats(workload: Any, ctx: Any, *, warmup: int, repeats: int, first_repeat: int = 0,
                    world: Any = None, comm: Any = None, meter: Any = None, progress: Any = None) -> Measured:
    """Run ``warmup`` discarded and ``repeats`` measured repeats of ``workload.run(ctx)`` on
    ``ctx.clock``. ``first_repeat``: ``ctx.repeat`` of the first measured one (a later round of
    ``--until-decided`` goes on counting, so a workload drawing its randomness from ctx.repeat gives
    new replicates); ``world``: the MPI communicator to meet on; ``comm``: the profiled one, reset
    when measuring starts; ``meter``: this rank's energy meter; ``progress``: told of each repeat."""
    clock = ctx.clock
    out = Measured()
    cpu0 = time.process_time()
    for i in range(warmup + repeats):
        measured = i >= warmup
        if progress is not None:
            progress.repeat(i, warmup + repeats, warmup)
        if world is not None:
            world.Barrier()
        if i == warmup:
            if comm is not None:
                comm.reset()
            cpu0 = time.process_time()
        ctx.repeat, ctx.warmup = i - warmup + (first_repeat if measured else 0), not measured
        ctx._replicates = {}
        clock.take()
        if meter is not None:
            meter.take(measured=False)   # what ran between repeats is no repeat's
        t0 = clock.now()
        out.metrics = clean_metrics(workload.run(ctx))
        elapsed = clock.now() - t0
        phases = clock.take()
        if meter is not None:
            meter.take(measured)
        if not measured:
            continue
        out.samples.append(elapsed)
        out.phases.append(phases)
        for key, value in out.metrics.items():
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                out.metric_samples.setdefault(key, []).append(value)
        for key, by_id in ctx._replicates.items():
            for rid, value in by_id.items():
                out.replicates.setdefault(key, {}).setdefault(rid, []).append(value)
    out.cpu_s = time.process_time() - cpu0
    return out


def clean_metrics(metrics: Any) -> dict[str, Any]:
    """Metrics as JSON-like values: numbers, strings, booleans and lists of them. NaN and
    infinities pass through; the parent stores them as null and names them in the record."""
    if metrics is None:
        return {}
    if not isinstance(metrics, dict):
        raise TypeError(f"run(ctx) must return a dict of metrics, got {type(metrics).__name__}")

    def scalar(key: str, v: Any) -> Any:
        if hasattr(v, "item") and callable(v.item):  # numpy scalars
            v = v.item()
        if v is None or isinstance(v, (bool, int, float, str)):
            return v
        raise TypeError(f"metric {key!r} has unsupported type {type(v).__name__}")

    keys = [k for k in metrics if not isinstance(k, str)]
    if keys:   # 1 and "1" would be one key in JSON: one value would silently replace the other
        raise TypeError(f"metric names must be strings, got {', '.join(f'{k!r} ({type(k).__name__})' for k in keys[:5])}")
    unencodable = surrogate_paths(metrics)
    if unencodable:   # no record, report or terminal can hold it as it is
        raise ValueError("metric names and values must be valid Unicode text, but a lone surrogate is in "
                         + ", ".join(unencodable[:5]).encode("utf-8", "backslashreplace").decode())
    out: dict[str, Any] = {}
    for key, value in metrics.items():
        if isinstance(value, (list, tuple)) or (hasattr(value, "tolist") and getattr(value, "ndim", 0) == 1):
            out[str(key)] = [scalar(key, v) for v in (value.tolist() if hasattr(value, "tolist") else value)]
        else:
            out[str(key)] = scalar(key, value)
    return out
