"""What ``harness info --json`` prints and ``harness capture`` writes as info.json: the machine
(fingerprint, identity, peaks, profile), MPI, the numerics environment, software, the backends here
and the ceilings this machine has measured."""
from __future__ import annotations

import pathlib
from typing import Any

from harness.commands.common import machine, registry
from harness.errors import UsageError
from harness.hardware.identity import identity
from harness.hardware.peaks import machine_peaks
from harness.launch.mpi import find_mpiexec, flavour
from harness.plugin_guard import available, guarded
from harness.results.record import Record
from harness.results.store import load_records
from harness.software import inherited_environment, numerics_environment, software


def measured_ceilings(paths: list[str], fp: dict) -> list[dict[str, object]]:
    """The latest ok figures of every declared ceiling (``Workload.ceilings``) per (workload, backend,
    threads) measured on this machine (same machine key).

    An unmatched machine has no profile peaks; these are what it has shown it can do."""
    records, _ = load_records(paths)
    latest: dict[tuple[str, str, int], Record] = {}
    this_machine = identity(fp)["key"]
    for r in records:
        if (not r.ok or not r.workload.ceilings or r.machine_key != this_machine
                or not any(r.number(m) is not None for m in r.workload.ceilings)):
            continue
        key = (r.workload.name, r.backend.label, r.launch.threads)
        if key not in latest or r.created > latest[key].created:
            latest[key] = r
    return [{"workload": w, "backend": b, "library": r.backend.library.split(" (")[0][:48], "threads": t,
             "ceilings": {m: round(v, 2) for m in r.workload.ceilings if (v := r.number(m)) is not None},
             "units": dict(r.workload.ceilings),
             "measured": r.created}
            for (w, b, t), r in sorted(latest.items())]


def backend_rows() -> list[dict[str, str]]:
    reg = registry()
    rows = []
    for name, b in sorted(reg.backends.items()):
        ok, why = available(b)
        try:
            desc = b.describe() if ok else {}
        except Exception as exc:  # noqa: BLE001 - one backend's failure must not hide the others
            desc = {"warnings": [f"describe() raised {exc!r}"]}
        rows.append({"name": name, "available": "yes" if ok else "no",
                     "drives": ",".join(guarded(b.frameworks)[0] or ()), "reason": why,
                     "library": desc.get("library") or "", "version": desc.get("version") or "",
                     "warnings": "; ".join(desc.get("warnings", [])),
                     "source": reg.source("backend", name)})
    return rows


def info_document(results: list[str] | None) -> tuple[dict[str, Any], list[str]]:
    """What ``harness info --json`` prints (the fingerprint, matched profile, MPI, numerics
    environment, software, backends and measured ceilings) and the results paths the ceilings came
    from (``results``; None: ./results if it exists). ``harness capture`` writes the same document."""
    fp, profile, profile_data = machine()
    mpiexec = find_mpiexec()
    mpi = {"mpiexec": str(mpiexec) if mpiexec else None, "flavour": flavour(mpiexec) if mpiexec else None}
    paths = results if results else (["results"] if pathlib.Path("results").is_dir() and
                                     results is None else [])
    try:
        ceilings = measured_ceilings(paths, fp) if paths else []
    except UsageError:
        if results:
            raise
        ceilings = []  # the default folder holds no results files yet
    return {"hardware": fp, "machine": identity(fp), "peaks": machine_peaks(fp, profile, profile_data),
            "profile": profile, "mpi": mpi, "environment": numerics_environment(inherited_environment()),
            "software": software(), "backends": backend_rows(), "measured_ceilings": ceilings}, paths
