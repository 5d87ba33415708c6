"""Records grouped into series: one per case (``case_id``) and machine, one point per run, oldest first.

A point is one run of the case: the records of one ``run_id`` (a resumed or until-decided run can
leave several) pooled into one set of timing samples. Points that did not run ok stay in the
series (a table shows them) but carry no timing, so change points never rest on them.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from harness.plan import case_label
from harness.results.record import Record


@dataclass
class Point:
    """One run of a case on a machine."""

    run_id: str
    created: str                     # ISO time of the run's (first) record
    records: list[Record]
    samples: list[float] = field(default_factory=list)   # every ok record's samples, pooled

    @property
    def status(self) -> str:
        statuses = {r.status for r in self.records}
        return "ok" if "ok" in statuses else ", ".join(sorted(statuses))

    @property
    def ok(self) -> bool:
        return bool(self.samples)

    @property
    def median(self) -> float | None:
        return float(np.median(self.samples)) if self.samples else None

    @property
    def interval(self) -> tuple[float, float] | None:
        """The stored 95 % interval of the median (one record), else the pooled samples' range."""
        ok = [r for r in self.records if r.ok and r.stats and r.stats.ci95]
        if len(ok) == 1:
            lo, hi = ok[0].stats.ci95   # type: ignore[union-attr]
            return float(lo), float(hi)
        return (float(min(self.samples)), float(max(self.samples))) if self.samples else None

    @property
    def commit(self) -> str:
        return self.records[0].commit

    @property
    def reason(self) -> str:
        """Why the run has no timing: a failed record's reason, or samples that are not timings."""
        if self.status == "ok" and not self.samples:
            return "no usable timing (samples missing, zero, negative or not finite)"
        return next((r.reason for r in self.records if r.reason and not r.ok), "")


@dataclass
class Series:
    """Every run of one case on one machine, oldest first."""

    case_id: str
    machine: str
    workload: str
    label: str                       # workload[size]{swept params} backend rRtT
    points: list[Point]

    @property
    def key(self) -> str:
        return f"{self.label} @ {self.machine}"


def record_label(record: Record) -> str:
    """The record's case in a line, as a run's progress names it (:func:`harness.plan.case_label`)."""
    return case_label(record.workload.name, record.size, record.swept, record.backend.requested,
                      record.launch.ranks, record.launch.threads)


def build_series(records: list[Record]) -> list[Series]:
    """The records as series, one per (case_id, machine key, workload version): a new version is
    other work and starts a series of its own. Records from before versions were kept (schema 3
    and older) form one series per case and machine, as they always did. Records of controls
    are left out (they are other cases), and so are records without a run id."""
    groups: dict[tuple[str, str, str], dict[str, list[Record]]] = {}
    order = {id(r): i for i, r in enumerate(records)}     # ties of `created` (1 s) go by file order
    for r in records:
        if r.control is not None or not r.run_id:
            continue
        groups.setdefault((r.case_id, r.machine_key, r.work_version if r.workload.version else ""), {}).setdefault(r.run_id, []).append(r)
    several: dict[tuple[str, str], list[str]] = {}
    for case_id, key, version in groups:
        several.setdefault((case_id, key), []).append(version)
    out = []
    for (case_id, key, version), runs in groups.items():
        points = []
        for run_id, recs in runs.items():
            recs.sort(key=lambda r: (r.created, order[id(r)]))
            samples = [float(s) for r in recs if r.ok for s in r.samples]
            if not all(math.isfinite(s) and s > 0 for s in samples):   # not a timing: no point to fit
                samples = []
            points.append(Point(run_id=run_id, created=recs[0].created, records=recs, samples=samples))
        points.sort(key=lambda p: (p.created, order[id(p.records[0])]))
        first = points[0].records[0]
        label = record_label(first)
        if len(several[(case_id, key)]) > 1:
            label += f" v{version or 'unversioned'}"
        out.append(Series(case_id=case_id, machine=first.machine, workload=first.workload.name,
                          label=label, points=points))
    out.sort(key=lambda s: (s.workload, s.label, s.machine))
    return out


def select(series: list[Series], workloads: list[str] | None, match: str | None) -> list[Series]:
    """The series of the given workloads whose key contains ``match`` (both optional)."""
    return [s for s in series if (not workloads or s.workload in workloads) and (not match or match in s.key)]


def as_json(series: Series) -> dict[str, Any]:
    return {"case_id": series.case_id, "machine": series.machine, "label": series.label,
            "points": [{"run_id": p.run_id, "created": p.created, "commit": p.commit, "status": p.status,
                        "median_s": p.median, "interval_s": list(p.interval) if p.interval else None,
                        "n": len(p.samples)} for p in series.points]}


def lean(record: Record, source: str = "") -> Record:
    """The record as a history keeps it (a ``scan`` row maker): its timings, status, identity and the
    conditions :func:`harness.history.provenance.provenance` compares; metrics, per-rank samples,
    replicates, phases, claims and the bulk of the hardware and software sections dropped. A series
    of 50,000 runs then fits in memory like ``show``'s columns do."""
    ident = record.machine_identity          # made from the whole hardware section where a record has none
    record.identity = {k: ident.get(k) for k in ("key", "label", "name")}
    hw = record.hardware or {}
    cpu = hw.get("cpu") or {}
    micro = cpu.get("microarch")
    record.hardware = {
        "arch": hw.get("arch"), "emulation": hw.get("emulation"), "tuning": hw.get("tuning"), "memory_bytes": hw.get("memory_bytes"),
        "gpus": [{"name": g.get("name")} for g in hw.get("gpus") or [] if isinstance(g, dict)], "os": hw.get("os"),
        "cpu": {"model": cpu.get("model"), "usable_cpus": cpu.get("usable_cpus"),
                "microarch": {"name": micro.get("name")} if isinstance(micro, dict) else None}}
    sw = record.software or {}
    record.software = {k: sw.get(k) for k in ("python", "harness", "packages", "mpi_library", "git")}
    record.metrics, record.metric_samples, record.replicates = {}, {}, {}
    record.samples_per_rank, record.phases, record.claims, record.stderr_tail = [], {}, [], ""
    record.system_load, record.comm = {}, None
    record.resources = {"hosts": (record.resources or {}).get("hosts")}
    record.backend.evidence, record.profile = {}, {"name": (record.profile or {}).get("name")}
    return record

