"""Records as a pandas DataFrame: one row per case, the columns a comparison needs."""
from __future__ import annotations

import functools
import json
import pathlib
import sys
from collections.abc import Mapping, Iterable
from typing import Any

import pandas as pd

from harness.judging.verdicts import claim_counts
from harness.judging.current_claims import current_verdicts
from harness.results.record import Record
from harness.output.safe_text import DISPLAY_CHARS, shortened


# Columns holding lists or dicts, which flat formats (CSV, Parquet) leave out.
NESTED_COLUMNS = ["samples", "compare_samples", "metrics", "ceilings", "claims", "phases", "placement"]
# What a reader may ask to keep: the nested columns, list-valued metrics, the claims' replicates
# (and "ceiling_metrics": only the metrics a workload names as machine ceilings).
EVERYTHING = frozenset(NESTED_COLUMNS) | {"metric_lists", "evidence"}
# Left out of flat exports too: the machine's description as JSON text, the same on every row of a
# machine (the flat row keeps its key and label).
NOT_FLAT = NESTED_COLUMNS + ["machine_info"]
#: the time to a training case's validation target: mean, interval, "reached/ran" (Record.time_to_quality)
TIME_TO_QUALITY = ["time_to_quality_s", "time_to_quality_low_s", "time_to_quality_high_s", "time_to_quality_runs",
                   "energy_to_quality_j"]

COLUMNS = ["file", "workload", "version", "work_digest", "case_id", "size", "params", "machine", "machine_key", "machine_info",
           "emulated", "backend", "library",
           "verified", "ranks", "threads", "usable_cpus", "status", "reason", "median_s", "ci95_low_s", "ci95_high_s", "cov",
           "unstable", "throughput", "throughput_unit", *TIME_TO_QUALITY, "fraction_of_peak", "peak_problem", "comm_fraction", "comm_imbalance",
           "energy_j", "energy_method", "allreduce_profiler", "claims_passed", "claims_failed",
           "claims_inconclusive", "claims_not_evaluated", "claims_not_applicable", "claims_premise_absent", "claims_total", "control",
           "duration_s", "timed_s", "created", "run_id", "commit", "samples", "compare_samples", "compare_by", "metrics", "ceilings", "claims", "phases", "placement"]


def _shown_params(swept: dict[str, Any]) -> dict[str, Any]:
    """The swept params with over-long names and text values shortened for display."""
    return {shortened(str(k)): shortened(v) if isinstance(v, str) else v for k, v in swept.items()}


def row(record: Record, source: str = "", keep: frozenset[str] = EVERYTHING,
        claims_now: Mapping[str, tuple[str, list[Any]]] | None = None) -> dict[str, Any]:
    """One DataFrame row (COLUMNS): what a comparison needs. ``claims`` holds the JSON text of
    the verdicts that apply to the case (text: 100,000 rows of dicts would take gigabytes;
    not-applicable ones are only counted, in ``claims_not_applicable``). A nested column not in
    ``keep`` is None, and so are list-valued metrics without "metric_lists" and the claims'
    replicate values without "evidence": a reader of 100,000 records keeps what it shows."""
    stats = record.stats
    ci = (stats.ci95 if stats else None) or [None, None]
    comm = record.comm
    throughput, unit = record.throughput()
    ttq = record.time_to_quality() or {}
    claims = current_verdicts(record, claims_now)
    compared = record.comparison_seconds()
    counts = claim_counts(claims)
    energy = record.resources.get("energy") or {}
    return {
        "file": source,
        "workload": shortened(record.workload.name),
        "version": record.work_version,
        "work_digest": record.work_digest,
        "case_id": shortened(record.case_id),
        "size": record.size,
        "params": json.dumps(_shown_params(record.swept or {}), sort_keys=True),
        "machine": shortened(record.machine),
        "machine_key": record.machine_key,
        "machine_info": machine_info(record),
        "emulated": record.emulated,
        "backend": shortened(record.backend.label),
        "library": shortened(record.backend.library or ""),
        "verified": record.backend.verified,
        "ranks": record.launch.ranks,
        "threads": record.launch.threads,
        "usable_cpus": (record.hardware.get("cpu") or {}).get("usable_cpus"),
        "status": record.status,
        "reason": shortened(record.reason, 4 * DISPLAY_CHARS),
        "median_s": stats.median if stats else None,
        "ci95_low_s": ci[0],
        "ci95_high_s": ci[1],
        "cov": stats.cov if stats else None,
        "unstable": stats.unstable if stats else None,
        "throughput": throughput,
        "throughput_unit": unit,
        # seconds to the validation target: mean over the trainings that reached it, their t-interval,
        # and "reached/ran" (a machine faster per step that needs more steps shows here)
        "time_to_quality_s": ttq.get("mean"),
        "time_to_quality_low_s": ttq.get("low"),
        "time_to_quality_high_s": ttq.get("high"),
        "time_to_quality_runs": f"{ttq['reached']}/{ttq['runs']}" if ttq else "",
        # joules from the training's start to its target (mean over the trainings that reached it)
        "energy_to_quality_j": record.energy_to_quality(),
        "fraction_of_peak": record.fraction_of_peak(),
        "peak_problem": record.peak_problem(),
        "comm_fraction": comm.fraction_max if comm else None,
        "comm_imbalance": comm.imbalance if comm else None,
        "energy_j": energy.get("median_j"),           # median joules per measured repeat, the nodes summed
        "energy_method": energy.get("method") or energy.get("reason") or "",
        # pmpi (C hook) or python (wrapper, ~0.5 us more per Allreduce); "" without MPI comm
        "allreduce_profiler": record.protocol.allreduce_profiler,
        "claims_passed": counts["pass"],
        "claims_failed": counts["fail"],
        "claims_inconclusive": counts["inconclusive"],
        "claims_not_evaluated": counts["not_evaluated"],
        "claims_not_applicable": counts["not_applicable"],
        "claims_premise_absent": counts["premise_absent"],
        "claims_total": len(claims),
        "control": record.control.role if record.control else "",
        "duration_s": record.duration_s,       # the case's wall seconds, start-up to verification
        "timed_s": float(sum(record.samples)),  # of which in measured repeats
        "created": record.created,
        "run_id": record.run_id,
        "commit": record.commit,
        "samples": record.samples if "samples" in keep else None,
        "compare_samples": compared[0] if "samples" in keep else None,
        "compare_by": compared[1],
        "metrics": _metrics(record, keep),
        "ceilings": (record.workload.ceilings or None) if "ceilings" in keep else None,
        "claims": json.dumps([_claim_json(c, "evidence" in keep) for c in claims
                              if c.status != "not_applicable"], separators=(",", ":"))
        if "claims" in keep else None,
        # JSON text {phase: slowest rank's seconds per repeat}, for the same reason as claims
        "phases": json.dumps({k: v.max_s for k, v in record.phases.items()}) if "phases" in keep else None,
        # JSON text [{phase, dtype, gflops, ...}] of the counted phases (harness.hardware.placement)
        "placement": placement_json(record) if "phases" in keep else None,
    }


PLACEMENT_FIELDS = ("dtype", "gflops", "flop_per_byte", "fraction_of_gemm_ceiling", "fraction_of_peak", "counted_by",
                    "placement_note")


def placement_json(record: Record) -> str | None:
    """The counted phases of ``record`` as JSON text (None: nothing counted)."""
    counted = [{"phase": name, **{f: getattr(ph, f) for f in PLACEMENT_FIELDS}}
               for name, ph in record.phases.items() if ph.gflops is not None]
    return json.dumps(counted, separators=(",", ":")) if counted else None


# machine_info's texts by what they are made of: a reader of 100,000 records makes one per machine
# (serialising the hardware per record to find it in a cache cost a third of a row's time).
_INFO: dict[tuple[Any, ...], str] = {}
_INFO_LIMIT = 4096


def machine_info(record: Record) -> str:
    """JSON text of what a report says about the record's machine: identity, its relation to
    a profile, the peaks derived from its core and clock (for every usable CPU). One text per
    machine (cached), however many records it ran: the facts are fixed by the key, the derived
    peaks by the core, the usable CPUs (in the facts) and the clock."""
    from harness.hardware.identity import profile_relation
    from harness.hardware.peaks import machine_peaks

    ident = record.machine_identity
    cpu = record.hardware.get("cpu") or {}
    profile = {k: record.profile.get(k) for k in ("name", "match_by")}
    key = (ident.get("key"), ident.get("label"), ident.get("name"), ident.get("core"), cpu.get("max_mhz"),
           profile["name"], profile["match_by"])
    text = _INFO.get(key)
    if text is None:
        if len(_INFO) >= _INFO_LIMIT:
            _INFO.clear()
        text = _INFO[key] = json.dumps({
            "key": ident.get("key"), "label": ident.get("label"), "name": ident.get("name"), "core": ident.get("core"),
            "facts": ident.get("facts"), "clock_mhz": cpu.get("max_mhz"),
            "profile": profile["name"], "profile_match": profile["match_by"], "relation": profile_relation(profile),
            "derived_peaks": machine_peaks(record.hardware, {}, {}),
            "measured_ghz": ((record.hardware.get("cpu") or {}).get("measured_clock") or {}).get("ghz"),
        }, sort_keys=True, default=str)
    return text


def _metrics(record: Record, keep: frozenset[str]) -> dict[str, Any] | None:
    """The metrics a reader keeps: all, the scalar ones (without "metric_lists"), only those the
    workload names as machine ceilings ("ceiling_metrics": the roofline plot) and the work of a
    repeat ("work_metrics": the report's model), or none."""
    if "metrics" in keep:
        if "metric_lists" in keep:
            return record.metrics
        return {k: v for k, v in record.metrics.items() if not isinstance(v, (list, dict))}
    out = {}
    if "ceiling_metrics" in keep and record.workload.ceilings:
        out.update({k: record.metrics[k] for k in record.workload.ceilings if k in record.metrics})
    if "work_metrics" in keep:
        out.update({k: v for k, v in record.metrics.items() if k.startswith("work_")})
    return out or None


def _claim_json(claim: Any, evidence: bool) -> dict[str, Any]:
    """A verdict's JSON; without ``evidence`` (a report at the records' own level) also without
    what the tables never show (the replicate values, the description, the control)."""
    out = claim.to_json()
    if not evidence:
        for key in ("evidence", "description", "control", "when"):
            out.pop(key, None)
    return out


# Columns whose values repeat from row to row: interned where a row is made, so that the
# rows a reading process sends back share one string per chunk (pickle keeps one copy of an
# object it meets twice), not one per row.
REPEATING = ("file", "workload", "version", "work_digest", "size", "params", "machine", "machine_key", "machine_info", "backend", "library", "status",
             "throughput_unit", "energy_method", "allreduce_profiler", "control", "run_id", "commit")


def row_values(record: Record, source: str, keep: frozenset[str] = EVERYTHING,
               claims_now: Mapping[str, tuple[str, list[Any]]] | None = None) -> tuple[Any, ...]:
    """:func:`row`'s values in COLUMNS order: a tuple is what crosses from a reading process."""
    values = row(record, source, keep, claims_now)
    for key in REPEATING:
        if isinstance(values[key], str):
            values[key] = sys.intern(values[key])
    return tuple(values.values())


def load_frame(paths: Iterable[str | pathlib.Path], keep: frozenset[str] = EVERYTHING,
               claims_now: Mapping[str, tuple[str, list[Any]]] | None = None) -> tuple[pd.DataFrame, list[str]]:
    """All readable records of files/folders as one DataFrame, and the problems of bad lines.
    Records are parsed by a pool of processes (harness.results.scan) and only their row, with the
    parts in ``keep``, comes back. ``claims_now`` ({workload: (work version, claims)}): the
    claims of the code reading them, applied to records of the current protocol versions."""
    from harness.results.scan import scan

    rows, problems = scan(paths, functools.partial(row_values, keep=keep, claims_now=claims_now))
    return distinct_machine_names(pd.DataFrame.from_records(rows, columns=COLUMNS)), problems


def distinct_machine_names(df: pd.DataFrame) -> pd.DataFrame:
    """Machines are told apart by key: where two keys share one label (two VMs that differ in
    memory, or a v3 record whose virtualisation is unknown), each label gets its key appended."""
    if df.empty:
        return df
    keys_per_name = df.groupby("machine").machine_key.nunique()
    shared = set(keys_per_name[keys_per_name > 1].index)
    if shared:
        hit = df.machine.isin(shared)
        df.loc[hit, "machine"] = df.machine[hit] + " {" + df.machine_key[hit] + "}"
    return df


def load(paths: Iterable[str | pathlib.Path] | str | pathlib.Path) -> pd.DataFrame:
    """The Python API: ``harness.results.load(["a.jsonl", "results/"]) -> DataFrame`` (bad lines are skipped)."""
    if isinstance(paths, (str, pathlib.Path)):
        paths = [paths]
    return load_frame(paths)[0]
