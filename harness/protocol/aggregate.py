"""Turning the per-rank figures a worker gathered into the record's samples, phases and comm."""
from __future__ import annotations

import statistics
from typing import Any

from harness.protocol.stats import across_ranks


def repeat_samples(ranks: list[dict[str, Any]]) -> list[float]:
    """One sample per measured repeat: the slowest rank's time (the job waits for it)."""
    per_rank = [r["samples"] for r in ranks]
    return [max(times) for times in zip(*per_rank)] if per_rank else []


def phase_summary(ranks: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per phase: seconds per repeat on each rank (mean over repeats), then max/mean/imbalance."""
    names = sorted({name for r in ranks for rep in r["phases"] for name in rep})
    out: dict[str, dict[str, Any]] = {}
    for name in names:
        per_rank, counts = [], []
        for r in ranks:
            reps = r["phases"] or [{}]
            per_rank.append(sum(rep.get(name, {}).get("seconds", 0.0) for rep in reps) / len(reps))
            counts.append(sum(rep.get(name, {}).get("count", 0) for rep in reps) / len(reps))
        agg = across_ranks(per_rank)
        out[name] = {"max_s": agg["max"], "mean_s": agg["mean"], "min_s": agg["min"],
                     "imbalance": agg["imbalance"], "per_rank_s": per_rank,
                     "count_per_repeat": max(counts) if counts else 0}
        out[name].update(phase_work(ranks, name, agg["max"]))
    return out


def phase_work(ranks: list[dict[str, Any]], name: str, max_s: float) -> dict[str, Any]:
    """The work counted in phase ``name``: per repeat, summed over ranks (the job's work), and the
    rate it ran at: the mean work per repeat over the slowest rank's seconds in the phase (the
    ranks work at once; the job waits for the slowest). Empty where nothing was counted."""
    repeats = max((len(r["phases"]) for r in ranks), default=0)
    out: dict[str, Any] = {}
    for key, field in (("flops", "flops_per_repeat"), ("bytes", "bytes_per_repeat")):
        if not any(key in rep.get(name, {}) for r in ranks for rep in r["phases"]):
            continue
        per_repeat = [sum(r["phases"][i].get(name, {}).get(key, 0.0) for r in ranks if i < len(r["phases"]))
                      for i in range(repeats)]
        out[field] = per_repeat
    if "flops_per_repeat" in out and max_s > 0:
        out["gflops"] = statistics.fmean(out["flops_per_repeat"]) / max_s / 1e9
    if "bytes_per_repeat" in out and max_s > 0:
        out["gbs"] = statistics.fmean(out["bytes_per_repeat"]) / max_s / 1e9
        total = sum(out["bytes_per_repeat"])
        if "flops_per_repeat" in out and total > 0:
            out["flop_per_byte"] = sum(out["flops_per_repeat"]) / total
    return out


def comm_summary(ranks: list[dict[str, Any]], repeats: int) -> dict[str, Any] | None:
    """Per operation: calls and bytes summed over ranks, time max/mean/imbalance, per-rank detail.

    Figures cover all measured repeats; ``per_repeat`` divides by their number. The comm
    fraction is each rank's comm time over its measured wall time.
    """
    if not any(r["comm"] for r in ranks):
        return None
    ops = sorted({op for r in ranks for op in r["comm"]})
    summary: dict[str, Any] = {}
    for op in ops:
        per_rank = [r["comm"].get(op, {"calls": 0, "bytes": 0, "seconds": 0.0}) for r in ranks]
        t = across_ranks([p["seconds"] for p in per_rank])
        summary[op] = {
            "calls": sum(p["calls"] for p in per_rank),
            "bytes": sum(p["bytes"] for p in per_rank),
            "seconds_max": t["max"], "seconds_mean": t["mean"], "imbalance": t["imbalance"],
            "per_rank": [dict(p, rank=r["rank"]) for p, r in zip(per_rank, ranks)],
        }
    comm_s = [sum(v["seconds"] for v in r["comm"].values()) for r in ranks]
    wall_s = [sum(r["samples"]) for r in ranks]
    fractions = [c / w if w > 0 else 0.0 for c, w in zip(comm_s, wall_s)]
    total_t = across_ranks(comm_s)
    return {
        "ranks": len(ranks),
        "repeats": repeats,
        "ops": summary,
        "total": {
            "calls": sum(v["calls"] for v in summary.values()),
            "bytes": sum(v["bytes"] for v in summary.values()),
            "seconds_max": total_t["max"], "seconds_mean": total_t["mean"],
            "imbalance": total_t["imbalance"],
            "fraction_max": max(fractions), "fraction_mean": sum(fractions) / len(fractions),
        },
        "per_repeat": {
            "calls": sum(v["calls"] for v in summary.values()) / max(repeats, 1) / len(ranks),
            "bytes": sum(v["bytes"] for v in summary.values()) / max(repeats, 1) / len(ranks),
            "seconds_max": total_t["max"] / max(repeats, 1),
        },
    }


def resource_summary(ranks: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "peak_rss_bytes": across_ranks([r["peak_rss_bytes"] for r in ranks]),
        "cpu_s": across_ranks([r["cpu_s"] for r in ranks]),
        "setup_s": across_ranks([r["setup_s"] for r in ranks]),
        "hosts": sorted({r["host"] for r in ranks}),
        "placement": [dict(r.get("placement") or {}, rank=r["rank"], host=r["host"]) for r in ranks],
        "energy": energy_summary(ranks),
    }


def energy_summary(ranks: list[dict[str, Any]]) -> dict[str, Any]:
    """The energy of every node (read by its lowest rank), summed per measured repeat and per
    phase, with the median joules per repeat; None with the reason where a node was not measured
    (a sum over some nodes would read as the whole job's)."""
    readings = [(r.get("host", "?"), r["energy"]) for r in ranks if r.get("energy")]
    if not readings:
        return {"method": None, "reason": "energy: not read", "median_j": None}
    missing = [(host, e) for host, e in readings if not e.get("joules_per_repeat")]
    if missing:
        host, first = missing[0]
        reason = first.get("reason") or "energy: not read"
        if len(missing) < len(readings):
            reason = (f"energy: measured on {len(readings) - len(missing)} of {len(readings)} nodes, so not summed "
                      f"({host}: {reason})")
        return {"method": None, "reason": reason, "median_j": None}
    per_repeat = [sum(values) for values in zip(*(e["joules_per_repeat"] for _, e in readings))]
    phases: dict[str, list[float]] = {}
    for _, e in readings:
        for name, values in (e.get("phases_j") or {}).items():
            phases[name] = [a + b for a, b in zip(phases.get(name, [0.0] * len(values)), values)]
    out = {"method": readings[0][1]["method"] + (f"; {len(readings)} nodes summed" if len(readings) > 1 else ""),
           "joules_per_repeat": per_repeat, "phases_j": phases,
           "median_j": float(statistics.median(per_repeat)) if per_repeat else None}
    if len(readings) > 1:
        out["per_node"] = dict(readings)
    else:
        out["sources_j"] = readings[0][1].get("sources_j", {})
    return out
