"""The records' series as asv result files, so that ``asv publish`` draws the history users really
ran, without rerunning anything.

Layout (asv 0.6, results api_version 2): one benchmark per workload, ``harness_records.<workload>``,
of type time, with one parameter ``case`` whose values are the case labels (size, the params that
were set, backend, ranks and threads); one asv machine per harness machine (``machine.json``); one
result file per machine and commit, holding every case's timing samples (runs at the same commit
are pooled, as ``asv run --append-samples`` does). Each claim the records judged becomes a track
benchmark too, ``harness_claims.<workload>.<claim>`` (parameter ``case``, the measured value: the
median of the runs at one commit), so asv draws a paper's figure (a Dice score, a speed-up) over
the commits beside the timings. asv places results by commit, so a record whose
commit is missing, or not in the repository ``asv publish`` reads, cannot be placed and is counted
as left out. ``benchmarks.json`` keeps asv's own benchmarks and gains these; ``asv run`` rewrites it
from the benchmark folder, so export again after an ``asv run``.
"""
from __future__ import annotations

import datetime as _dt
import hashlib
import json
import math
import pathlib
import re
import statistics
import subprocess
from dataclasses import dataclass, field
from typing import Any

from harness.history.series import Series
from harness.results.record import Record

ENV_NAME = "hpml-harness-records"
PREFIX = "harness_records"
CLAIMS_PREFIX = "harness_claims"
_COMPARISON_WORDS = {">=": " ge ", "<=": " le ", "==": " eq ", ">": " gt ", "<": " lt "}


@dataclass
class Export:
    """What an export wrote and what it could not place."""

    results_dir: pathlib.Path
    files: list[pathlib.Path] = field(default_factory=list)
    benchmarks: list[str] = field(default_factory=list)
    left_out: dict[str, int] = field(default_factory=dict)    # reason -> records


def machine_slug(machine: str) -> str:
    """An asv machine name (a folder name) from a harness machine label."""
    return re.sub(r"[^A-Za-z0-9._-]+", "-", machine).strip("-")[:100] or "machine"


def benchmark_name(workload: str) -> str:
    return f"{PREFIX}.{re.sub(r'[^A-Za-z0-9_]', '_', workload)}"


def claim_benchmark_name(workload: str, claim: str) -> str:
    """``harness_claims.<workload>.<claim>``, the claim's text in identifier characters (its
    comparison as ge/le/gt/lt/eq, so that ``dice >= 0.8`` and ``dice <= 0.8`` stay apart)."""
    text = claim
    for sign, word in _COMPARISON_WORDS.items():
        text = text.replace(sign, word)
    slug = re.sub(r"[^A-Za-z0-9]+", "_", text).strip("_")[:100] or "claim"
    return f"{CLAIMS_PREFIX}.{re.sub(r'[^A-Za-z0-9_]', '_', workload)}.{slug}"


def _version(name: str) -> str:
    return hashlib.sha256(f"hpml-harness records: {name}".encode()).hexdigest()


def _commit_dates(repo: pathlib.Path, commits: set[str]) -> dict[str, int]:
    """commit -> its commit time in ms (asv's 'date'), for the commits the repository has."""
    dates = {}
    for c in sorted(commits):
        out = subprocess.run(["git", "-C", str(repo), "show", "-s", "--format=%ct", c + "^{commit}"],
                             capture_output=True, text=True, timeout=30)
        if out.returncode == 0 and out.stdout.strip().isdigit():
            dates[c] = int(out.stdout.strip()) * 1000
    return dates


def _full_commit(record: Record) -> str | None:
    git = (record.software or {}).get("git") or {}
    commit = git.get("commit") if isinstance(git, dict) else None
    return commit if isinstance(commit, str) and re.fullmatch(r"[0-9a-f]{40}", commit) else None


def _machine_info(record: Record, slug: str) -> dict[str, Any]:
    hw = record.hardware or {}
    cpu = hw.get("cpu") or {}
    return {"machine": slug, "arch": str(hw.get("arch", "")), "cpu": str(cpu.get("model", "")),
            "num_cpu": str(cpu.get("usable_cpus") or cpu.get("logical_cpus") or ""),
            "os": str(hw.get("os", "")), "ram": str(hw.get("memory_bytes", "")), "version": 1}


def export(series: list[Series], results_dir: pathlib.Path, repo: pathlib.Path) -> Export:
    """Write the asv results of ``series`` under ``results_dir``; commits are looked up in ``repo``."""
    from asv import util
    from asv.results import Results
    from asv.runner import BenchmarkResult

    done = Export(results_dir=results_dir)
    placed: dict[str, dict[str, dict[str, dict[str, list[float]]]]] = {}   # slug -> commit -> benchmark -> case -> values
    infos: dict[str, dict[str, Any]] = {}
    cases: dict[str, set[str]] = {}          # benchmark -> case labels
    benchmarks: dict[str, dict[str, Any]] = {}
    commits = {c for s in series for p in s.points for r in p.records if (c := _full_commit(r))}
    dates = _commit_dates(repo, commits)
    for s in series:
        slug = machine_slug(s.machine)
        for p in s.points:
            for r in p.records:
                commit = _full_commit(r)
                why = ("no commit recorded" if commit is None else
                       f"commit not in {repo}" if commit not in dates else
                       "did not run ok" if not r.ok or not r.samples else "")
                if why:
                    done.left_out[why] = done.left_out.get(why, 0) + 1
                    continue
                if slug not in infos:
                    infos[slug] = _machine_info(r, slug)
                by_bench = placed.setdefault(slug, {}).setdefault(commit, {})
                timing = benchmark_name(s.workload)
                if timing not in benchmarks:
                    benchmarks[timing] = _benchmark(timing, "time", "seconds",
                                                    f"timings of the hpml-harness workload {s.workload!r}")
                cases.setdefault(timing, set()).add(s.label)
                by_bench.setdefault(timing, {}).setdefault(s.label, []).extend(float(x) for x in r.samples)
                for v in r.claims:
                    if v.measured is None or not math.isfinite(v.measured):
                        continue
                    name = claim_benchmark_name(s.workload, v.text)
                    if name not in benchmarks:
                        benchmarks[name] = _benchmark(name, "track", "unit",
                                                      f"the hpml-harness claim {s.workload}: {v.text}")
                    cases.setdefault(name, set()).add(s.label)
                    by_bench.setdefault(name, {}).setdefault(s.label, []).append(float(v.measured))
    for name, bench in benchmarks.items():
        bench["params"] = [[repr(c) for c in sorted(cases[name])]]
    for slug, by_commit in placed.items():
        (results_dir / slug).mkdir(parents=True, exist_ok=True)
        util.write_json(str(results_dir / slug / "machine.json"), infos[slug], api_version=1)
        for commit, by_bench in by_commit.items():
            res = Results({**{k: v for k, v in infos[slug].items() if k != "version"}, "python": ENV_NAME},
                          {}, commit, dates[commit], ENV_NAME, ENV_NAME, {})
            for name, by_case in by_bench.items():
                bench = benchmarks[name]
                values = [by_case.get(label) for label in sorted(cases[name])]
                if bench["type"] == "time":      # asv takes the samples' median as the result
                    result = BenchmarkResult(result=[math.nan if v is None else 0.0 for v in values], samples=values,
                                             number=[None if v is None else 1 for v in values], errcode=0,
                                             stderr="", profile=None)
                else:                            # a track: one value, the median of the runs at this commit
                    result = BenchmarkResult(result=[math.nan if v is None else statistics.median(v) for v in values],
                                             samples=[None] * len(values), number=[None] * len(values), errcode=0,
                                             stderr="", profile=None)
                res.add_result(bench, result, started_at=_dt.datetime.now(_dt.timezone.utc), record_samples=True)
            res.save(str(results_dir))
            done.files.append(results_dir / slug / f"{commit[:8]}-{ENV_NAME}.json")
    _merge_benchmarks(results_dir, list(benchmarks.values()))
    done.benchmarks = sorted(b["name"] for b in benchmarks.values())
    return done


def _benchmark(name: str, kind: str, unit: str, what: str) -> dict[str, Any]:
    """asv's description of one exported benchmark (its params are filled in once all are known)."""
    return {"name": name, "params": [], "param_names": ["case"], "type": kind, "unit": unit,
            "version": _version(name), "code": f"# {what}, exported by `harness export-asv`",
            "timeout": 0, "number": 1, "repeat": 0, "min_run_count": 1, "rounds": 1,
            "sample_time": 0.01, "warmup_time": -1}


def _merge_benchmarks(results_dir: pathlib.Path, ours: list[dict[str, Any]]) -> None:
    """benchmarks.json with asv's own entries kept and these added (or replaced)."""
    from asv import util
    path = results_dir / "benchmarks.json"
    current: dict[str, Any] = {}
    if path.is_file():
        try:
            current = json.loads(path.read_text())
        except (OSError, ValueError):
            current = {}
    if current.get("version") != 2:
        current = {}
    current.pop("version", None)
    current.update({b["name"]: b for b in ours})
    results_dir.mkdir(parents=True, exist_ok=True)
    util.write_json(str(path), current, api_version=2)
