"""asv benchmarks built from the plugin registry, so third-party workloads appear too.

* ``TimeSmoke.time_smoke(workload)``: asv times one repeat (``Workload.run``) at size smoke,
  in-process with a single-rank profiled communicator (harness.testing.prepare); setup is untimed.
* ``TrackClaims.track_metric(workload, metric)``: the value of every metric a workload's
  claims name, from one smoke repeat, so asv plots e.g. accuracy across commits.

Workloads that cannot run here (a missing package, a parameter check) are skipped by asv
(``NotImplementedError`` from setup), with the reason printed.
"""
from __future__ import annotations

from typing import Any

from harness.registry import build_registry
from harness.testing import prepare

_REGISTRY = build_registry()
WORKLOADS = sorted(_REGISTRY.workloads)
CLAIM_METRICS = sorted({(name, c.metric) for name, w in _REGISTRY.workloads.items() for c in w.claims
                        if c.relative_to is None})


def _context(name: str) -> tuple[Any, Any]:
    """The workload and its context after setup (harness.testing.prepare), or asv's skip."""
    workload = _REGISTRY.workload(name)
    why = workload.skip_reason(workload.resolve_params("smoke", {}), 1)
    if why:
        print(f"skipping {name}: {why}")
        raise NotImplementedError(why)
    try:
        import mpi4py  # noqa: F401
    except ImportError as exc:
        raise NotImplementedError(f"mpi4py is not usable: {exc}") from None
    return prepare(workload, "smoke", profile_dirs=list(_REGISTRY.profile_dirs), mpi=True)


class TimeSmoke:
    params = [WORKLOADS]
    param_names = ["workload"]
    timeout = 300
    number = 1
    repeat = (3, 10, 60.0)

    def setup(self, workload: str) -> None:
        self.workload, self.ctx = _context(workload)
        self.workload.run(self.ctx)  # warmup

    def time_smoke(self, workload: str) -> None:
        self.workload.run(self.ctx)


class TrackClaims:
    params = [[f"{w}:{m}" for w, m in CLAIM_METRICS] or ["none:none"]]
    param_names = ["workload_metric"]
    timeout = 300

    def setup(self, workload_metric: str) -> None:
        name, _, self.metric = workload_metric.partition(":")
        if name not in _REGISTRY.workloads:
            raise NotImplementedError("no workload declares a claim")
        self.workload, self.ctx = _context(name)

    def track_metric(self, workload_metric: str) -> float:
        value = self.workload.run(self.ctx).get(self.metric)
        return float(value) if isinstance(value, (int, float)) else float("nan")

    track_metric.unit = "metric"  # type: ignore[attr-defined]
