"""What a machine we do not have would do: a roofline model, never mixed with measurements.

A workload that reports the work of one measured repeat as metrics, ``work_flops_fp64``,
``work_flops_fp32`` (floating-point operations at that precision) and ``work_bytes`` (bytes moved
to and from memory), gets a predicted time per repeat on every hardware profile: each kind of
work at its roof, one after another (no overlap),

    t = sum_p work_flops_p / peak_p + work_bytes / memory bandwidth,

with the profile's whole-node (or whole-GPU) peaks. Only where a record ran on that profile's own
SKU (an exact match, harness.hardware.identity.exact_profile) with every core of the node does
the table also give measured / predicted (1: at the roof; 10: a tenth of it): a slice of a node,
or another machine of the same family, is never judged against a whole node.
"""
from __future__ import annotations

import functools
import json
import math
from typing import Any

import pandas as pd

PRECISIONS = ("fp64", "fp32")


def predicted_seconds(work: dict[str, float], profile: dict[str, Any]) -> float | None:
    """The roofline time of ``work`` on ``profile``, or None when the profile lacks a needed peak."""
    total = 0.0
    for p in PRECISIONS:
        flops = work.get(f"work_flops_{p}") or 0.0
        if flops:
            peak = (profile.get("peak") or {}).get(f"{p}_gflops")
            if not peak:
                return None
            total += flops / (peak * 1e9)
    moved = work.get("work_bytes") or 0.0
    if moved:
        bandwidth = (profile.get("memory") or {}).get("bandwidth_gbs")
        if not bandwidth:
            return None
        total += moved / (bandwidth * 1e9)
    return total if total > 0 else None


def _work(metrics: Any) -> dict[str, float]:
    if not isinstance(metrics, dict):
        return {}
    out = {}
    for key in (*(f"work_flops_{p}" for p in PRECISIONS), "work_bytes"):
        value = metrics.get(key)
        if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and value > 0:
            out[key] = float(value)
    return out


def _whole_node_of(r: Any, name: str, profile: dict[str, Any]) -> bool:
    """The record ran on profile ``name``'s own SKU, on at least all of the node's cores."""
    from harness.hardware.identity import exact_profile

    try:
        info = json.loads(getattr(r, "machine_info", None))
    except (TypeError, ValueError):
        return False
    if info.get("profile") != name or not exact_profile({"name": name, "match_by": info.get("profile_match")}):
        return False
    cores = (profile.get("cpu") or {}).get("cores")
    return profile.get("kind") == "gpu" or (bool(cores) and r.ranks * r.threads >= cores)


@functools.lru_cache(maxsize=1)
def registered_profiles() -> dict[str, dict[str, Any]]:
    """Every registered hardware profile's data, read once per report (the model table and the
    machines table both need them)."""
    from harness.hardware.profiles import hardware_profiles

    return hardware_profiles()


def model_rows(df: pd.DataFrame, profiles: dict[str, dict[str, Any]]) -> tuple[list[str], list[list[str]]]:
    """(columns, rows): one row per ok case that reports its work (the latest per case and
    machine), one column per profile with the predicted seconds per repeat; a cell of the profile
    the record's machine matched adds measured / predicted."""
    if df.empty or "metrics" not in df or df.metrics.isna().all():
        return [], []
    ok = df[(df.status == "ok") & (df.control.fillna("") == "")]
    ok = ok.sort_values("created").drop_duplicates(["workload", "size", "params", "ranks", "threads", "backend",
                                                    "machine"], keep="last")
    names = sorted(profiles)
    rows = []
    for r in ok.itertuples():
        work = _work(r.metrics)
        if not work:
            continue
        params = "" if r.params in ("{}", "", None) else f" {r.params}"
        cells = [f"{r.workload}[{r.size}]{params} on {r.machine}", f"{r.median_s:.3g} s" if r.median_s else ""]
        for name in names:
            t = predicted_seconds(work, profiles[name])
            text = "" if t is None else f"{t:.3g} s"
            if t and r.median_s and not r.emulated and _whole_node_of(r, name, profiles[name]):
                text += f" (measured / predicted {r.median_s / t:.2g})"
            cells.append(text)
        rows.append(cells)
    return (["case (where it was measured)", "measured there", *names], rows) if rows else ([], [])
