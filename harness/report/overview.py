"""What a report of several machines says first: the machines, and how much faster each is.

**Machines**: one row per machine (by key): its label, the facts its key is made of, how it
relates to a hardware profile (never named after one it only resembles), its peaks and where
they come from ("profile" for its own SKU, "derived" from its core and clock,
harness.hardware.peaks) and the measured roofline ceiling where the roofline ran.

**Speed-up per workload**: for each workload and machine, the geometric mean over the cases it
matched with the reference machine (same workload version, :func:`~harness.report.machines.matched_cases`)
of median(reference seconds) / median(machine seconds), with a seeded bootstrap interval that
resamples each case's repeats on both sides independently.
"""
from __future__ import annotations

import json
import math
from typing import Any

import numpy as np
import pandas as pd

from harness.hardware.peaks import fraction_or_problem
from harness.report.machines import compared_seconds, machines_of, matched_cases, usable
from harness.judging.intervals import DEFAULT_CONFIDENCE, bootstrap_medians

BOOTSTRAP = 1000


def _fmt(x: Any, digits: int = 3) -> str:
    return "" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.{digits}g}"


def _profile_peaks(info: dict[str, Any]) -> dict[str, Any] | None:
    """The exact profile's whole-node peaks (a machine that is that SKU), else None."""
    from harness.hardware.identity import exact_profile
    from harness.hardware.peaks import machine_peaks

    if not exact_profile({"name": info.get("profile"), "match_by": info.get("profile_match")}):
        return None
    from harness.report.model import registered_profiles

    prof = registered_profiles().get(info.get("profile") or "")
    if prof is None or prof.get("kind") != "cpu-node":
        return None
    return machine_peaks({"cpu": {"usable_cpus": prof.get("cpu", {}).get("cores")}},
                         {"name": info["profile"], "match_by": info["profile_match"]}, prof)



def machine_rows(df: pd.DataFrame) -> tuple[list[str], list[list[str]]]:
    """The machines table (see the module's docstring), machines in the report's order."""
    names = machines_of(df)
    columns = ["machine", "key", "facts", "hardware profile", "fp64 peak (GFLOP/s)", "measured fp64 GEMM (GFLOP/s)"]
    rows = []
    for name in names:
        mine = df[df.machine == name]
        info = machine_info_of(mine)
        f = info.get("facts") or {}
        facts = "; ".join(t for t in (
            f"{f.get('cpus')} CPUs usable" + (f" on {f['sockets']} socket(s)" if f.get("sockets") else "")
            if f.get("cpus") else "",
            f"{f['memory_gib']:g} GiB" if f.get("memory_gib") else "",
            {True: "virtualised", False: "bare metal", None: "virtualisation unknown"}[f.get("virtualised")],
            f"core {info.get('core')}" if info.get("core") else "",
            ", ".join(f.get("gpus") or []),
            f"clock {info['clock_mhz']:.0f} MHz reported" if info.get("clock_mhz") else "",
            f"cores measured at {info['measured_ghz']:.2f} GHz" if info.get("measured_ghz") else "") if t)
        peaks = _profile_peaks(info) or info.get("derived_peaks") or {}
        peak = (f"{peaks['fp64_gflops']:.4g} ({peaks['how']})" if peaks.get("fp64_gflops")
                else f"none: {peaks.get('how', 'unknown')}")
        roof = mine[(mine.workload == "roofline") & (mine.status == "ok") & mine.throughput.notna()]
        measured = ""
        if len(roof):
            best = roof.loc[roof.throughput.astype(float).idxmax()]
            threads = best.ranks * best.threads
            measured = f"{best.throughput:.4g} (measured, {threads} thread(s), {best.backend})"
            cpus = f.get("cpus") or threads
            if peaks.get("fp64_gflops") and threads >= cpus:
                fraction, problem = fraction_or_problem(float(best.throughput), peaks["fp64_gflops"], "peak")
                if problem:
                    measured += "; " + problem
                elif peaks.get("source") == "derived" and peaks.get("clock") != "measured":
                    measured += ("; no fraction: the peak is at the reported clock (the records predate the "
                                 "measured clock), below the clock the cores run at")
                else:
                    measured += f"; {fraction:.0%} of the peak"
        rows.append([name, info.get("key") or mine.machine_key.iloc[0], facts, info.get("relation") or "none",
                     peak, measured])
    return columns, rows


def machine_info_of(rows: pd.DataFrame) -> dict[str, Any]:
    """The machine facts of a machine's rows: those of a record whose clock was measured where one
    was (its peak is derived from the clock the cores ran at), else the first record's."""
    if "machine_info" not in rows or not len(rows):
        return {}
    infos = [json.loads(text) for text in dict.fromkeys(rows.machine_info.dropna())]
    return next((i for i in infos if i.get("measured_ghz")), infos[0] if infos else {})


def _geomean_speedup(pairs: list[tuple[np.ndarray, np.ndarray]], rng: np.random.Generator,
                     confidence: float) -> tuple[float, float | None, float | None]:
    """Geometric mean over cases of median(ref) / median(machine), with a bootstrap interval."""
    point = float(np.exp(np.mean([math.log(np.median(a) / np.median(b)) for a, b in pairs])))
    if any(len(a) < 2 or len(b) < 2 for a, b in pairs):
        return point, None, None
    draws = np.mean([np.log(bootstrap_medians(a, rng, BOOTSTRAP) / bootstrap_medians(b, rng, BOOTSTRAP))
                     for a, b in pairs], axis=0)
    tail = (1 - confidence) / 2
    lo, hi = np.exp(np.quantile(draws, [tail, 1 - tail]))
    return point, float(lo), float(hi)


def speedup_matrix(df: pd.DataFrame, reference: str | None = None, confidence: float = DEFAULT_CONFIDENCE,
                   seed: int = 0) -> tuple[list[str], list[list[str]]]:
    """(columns, rows): one row per workload, one column per machine after the reference: the
    geometric-mean speed-up over the reference [bootstrap interval] (n matched cases)."""
    ok = usable(df[~df.emulated.astype(bool)]) if not df.empty else df
    if ok.empty:
        return [], []
    names = machines_of(ok, reference)
    if len(names) < 2:
        return [], []
    ref = names[0]
    pairs: dict[tuple[str, str], list[tuple[np.ndarray, np.ndarray]]] = {}
    bases: dict[tuple[str, str], set[str]] = {}
    for key, per, _ in matched_cases(ok, names):
        if ref not in per:
            continue
        for m in names[1:]:
            if m in per:
                a, b, basis = compared_seconds(per[ref], per[m])
                if len(a) and len(b) and np.all(a > 0) and np.all(b > 0):
                    pairs.setdefault((key[0], m), []).append((a, b))
                    bases.setdefault((key[0], m), set()).add(basis)
    rng = np.random.default_rng(seed)
    rows = []
    for workload in sorted({w for w, _ in pairs}):
        row = [workload]
        for m in names[1:]:
            got = pairs.get((workload, m))
            if not got:
                row.append("")
                continue
            est, lo, hi = _geomean_speedup(got, rng, confidence)
            interval = f" [{_fmt(lo)}, {_fmt(hi)}]" if lo is not None else " (no interval: 1 repeat)"
            by = sorted(b for b in bases.get((workload, m), set()) if b)
            basis = f"; per seed: {', '.join(by)}" if by else ""
            row.append(f"x{_fmt(est)}{interval} ({len(got)} case{'s' * (len(got) > 1)}{basis})")
        rows.append(row)
    return ["workload", *[f"{m}" for m in names[1:]]], rows


PAIRWISE_MAX = 12   # machines: a wider table is unread, and its cells grow with the square


def pairwise_matrix(df: pd.DataFrame, confidence: float = DEFAULT_CONFIDENCE, seed: int = 0) -> tuple[list[str], list[list[str]]]:
    """(columns, rows) for 3 to PAIRWISE_MAX real machines: per pair, the geometric-mean speed-up of the column's
    machine over the row's on every case both ran in the same work version [bootstrap interval]
    (n cases), so that every pair with matched cases is compared somewhere, whatever the reference."""
    ok = usable(df[~df.emulated.astype(bool)]) if not df.empty else df
    names = machines_of(ok) if not ok.empty else []
    if not 3 <= len(names) <= PAIRWISE_MAX:
        return [], []
    pairs: dict[tuple[str, str], list[tuple[np.ndarray, np.ndarray]]] = {}
    for _, per, _ in matched_cases(ok, names, every_version=True):
        present = [m for m in names if m in per]
        for a in present:
            for b in present:
                if a != b:
                    sa, sb, _ = compared_seconds(per[a], per[b])
                    if len(sa) and len(sb) and np.all(sa > 0) and np.all(sb > 0):
                        pairs.setdefault((a, b), []).append((sa, sb))
    rng = np.random.default_rng(seed)
    rows = []
    for a in names:
        row = [a]
        for b in names:
            got = pairs.get((a, b))
            if a == b or not got:
                row.append("" if a == b else "no matched case")
                continue
            est, lo, hi = _geomean_speedup(got, rng, confidence)
            interval = f" [{_fmt(lo)}, {_fmt(hi)}]" if lo is not None else " (no interval)"
            row.append(f"x{_fmt(est)}{interval} ({len(got)})")
        rows.append(row)
    return ["row machine \\ speed-up of", *names], rows
