"""Machines side by side: matched cases per machine with intervals, the claims' verdicts per
machine, and performance portability.

A machine is a record's machine identity (harness.hardware.identity: a key from its facts, shown
by its label or --machine-name; emulated runs are their own machine). A case is matched across
machines on workload, size, swept params, ranks, threads (or "all CPUs"), backend **and workload
version**: a machine that ran another version of a case is left out of that case's row and the
case is listed once as "different protocol". Timings of emulated machines are never compared
(their verdicts are shown, their ratios are not).

Speed-up of machine M over the reference R on a case: median(R's seconds per repeat) /
median(M's), with a seeded bootstrap interval (both sample sets resampled independently).

Performance portability (Pennycook, Sewall and Lee, "Implications of a metric for performance
portability", FGCS 2019): PP = |H| / sum_i 1/e_i over the machines H of the report, 0 when one
of them did not run the workload. Application efficiency e_i = the machine's throughput over
the best observed on that case (1 / median seconds); architectural efficiency = the workload's
declared fraction of the machine's peak. Per workload, a machine's efficiency is the geometric
mean over the workload's cases that every machine ran; the interval comes from a bootstrap
over the per-repeat samples. Only cases whose backend verification did not fail count.
"""
from __future__ import annotations

import math
import pathlib
from collections.abc import Iterator
from typing import Any

import numpy as np
import pandas as pd

from harness.judging.intervals import DEFAULT_CONFIDENCE, ratio_of_medians
from harness.report.units import joules_per_item
from harness.report.verdicts import corrections, verdicts
from harness.results.frame import TIME_TO_QUALITY
from harness.judging.intervals import bootstrap_medians

CASE_KEY = ["workload", "size", "params", "ranks", "cpus", "backend"]
BOOTSTRAP = 1000


def usable(df: pd.DataFrame) -> pd.DataFrame:
    """Ok measurement records (not controls), verification not failed, the latest per case and
    machine. ``cpus`` is the threads per rank, or "all" where one rank took every usable CPU of
    the machine (a one-rank case's default), so a default run matches across core counts."""
    ok = df[(df.status == "ok") & (df.control.fillna("") == "") & (df.verified != False)]  # noqa: E712
    every = (ok.ranks == 1) & ok.usable_cpus.notna() & (ok.threads >= ok.usable_cpus.fillna(10**9))
    ok = ok.assign(cpus=np.where(every, "all", ok.threads.astype(str)))
    return split_by_work(ok.sort_values("created").drop_duplicates(CASE_KEY + ["machine"], keep="last"))


def split_by_work(ok: pd.DataFrame) -> pd.DataFrame:
    """Rows of one case and protocol version whose work digests differ (the params or the facts
    the workload states about its work: harness.work_identity) get versions of their own
    ("pv:3, work 1a2b..."): a protocol version that should have been bumped keeps them apart."""
    if ok.empty or "work_digest" not in ok:
        return ok
    digests = ok.work_digest.fillna("")
    kinds = ok.assign(_d=digests).groupby(CASE_KEY + ["version"], dropna=False)["_d"].transform(
        lambda d: len(set(d) - {""}))
    clash = (kinds > 1).to_numpy()
    if not clash.any():
        return ok
    version = ok.version.astype(str).where(~clash, ok.version.astype(str) + ", work " + digests.str[:8])
    return ok.assign(version=version)


def machines_of(df: pd.DataFrame, reference: str | None = None) -> list[str]:
    """The machines, real ones before emulated ones, each group in the order of the files given;
    the reference first (``reference`` matches a substring; default: the first real machine,
    since an emulated machine's timings are not the machine's)."""
    inputs = [str(pathlib.Path(i)) for i in df.attrs.get("inputs") or []]

    def rank(file: str) -> int:   # the position of the input (file or folder) the record came from
        return next((i for i, given in enumerate(inputs) if str(file).startswith(given)), len(inputs))

    order = df.assign(_file=df.file.map(rank)) if "file" in df else df.assign(_file=0)
    firsts = order.sort_values(["_file"], kind="stable").drop_duplicates("machine")
    names = [m for m, e in zip(firsts.machine, firsts.emulated.astype(bool)) if not e] + \
            [m for m, e in zip(firsts.machine, firsts.emulated.astype(bool)) if e]
    if not reference and len(names) > 1 and {"version", "samples"} <= set(df.columns):
        best, _ = default_reference(df)
        if best in names:
            names.remove(best)
            names.insert(0, best)
    if reference:
        chosen = [m for m in names if reference.lower() in m.lower()]
        if not chosen:
            from harness.errors import UsageError
            raise UsageError(f"--reference {reference!r}: no machine matches; machines here: {'; '.join(names)}")
        names.remove(chosen[0])
        names.insert(0, chosen[0])
    return names


def compared_seconds(a: Any, b: Any) -> tuple[np.ndarray, np.ndarray, str]:
    """The seconds two machines' rows of one case are compared by: per seed (or per training)
    the workload's compare_by metric where both rows have it (time to the quality target, a
    training time: harness.results.record.Record.comparison_seconds), else their repeats' wall
    times; with the basis ('' for the repeats)."""
    basis_a, basis_b = getattr(a, "compare_by", "") or "", getattr(b, "compare_by", "") or ""
    if basis_a and basis_a == basis_b:
        sa, sb = samples_array(a.compare_samples), samples_array(b.compare_samples)
        if len(sa) >= 2 and len(sb) >= 2:
            return sa, sb, basis_a
    return samples_array(a.samples), samples_array(b.samples), ""


def _case_groups(df: pd.DataFrame) -> list[list[str]]:
    """The real (not emulated) machines of each case and work version of ``df``'s usable rows."""
    ok = usable(df[~df.emulated.astype(bool)]) if not df.empty else df
    if ok.empty:
        return []
    return [list(dict.fromkeys(g.machine)) for _, g in ok.groupby(CASE_KEY + ["version"], dropna=False)]


def partners(df: pd.DataFrame, machine: str) -> set[str]:
    """The machines that share at least one case in one work version with ``machine``."""
    return {m for group in _case_groups(df) if machine in group for m in group if m != machine}


def default_reference(df: pd.DataFrame) -> tuple[str | None, str]:
    """(the machine sharing the most matched cases with the others, why): the default reference
    of the speed-ups, so that the headline compares as much as the records allow (ties: the
    machine read first). A machine's count is, over the cases it ran, the other machines that
    ran the same case in the same work version (linear in the rows: 3,000 machines stay cheap)."""
    totals: dict[str, int] = {}
    for group in _case_groups(df):
        for m in group:
            totals[m] = totals.get(m, 0) + len(group) - 1
    if not totals:
        return None, ""
    best = max(totals, key=lambda m: totals[m])     # max keeps the first of equals: the order read
    return best, (f"the machine sharing the most matched cases with the others ({totals[best]} case-machine "
                  "pairs in the same work version); --reference chooses another")


def samples_array(values: Any) -> np.ndarray:
    """Seconds per measured repeat (empty when the frame was loaded without samples)."""
    return np.asarray(values if isinstance(values, (list, tuple, np.ndarray)) else [], dtype=float)


def matched_cases(ok: pd.DataFrame, names: list[str], every_version: bool = False
                  ) -> Iterator[tuple[tuple[Any, ...], dict[str, Any], dict[str, list[str]]]]:
    """(case key, {machine: its row} of the machines that ran the compared version, {version:
    machines} when machines ran different versions, else {}) per case of ``usable`` rows. The
    compared version is the reference's (``names[0]``), else the one most machines ran;
    ``every_version``: one item per version instead (every group of machines that ran the same work)."""
    for key, group in ok.groupby(CASE_KEY, sort=True, dropna=False):
        per = {r.machine: r for r in group.itertuples()}
        versions: dict[str, list[str]] = {}
        for m in names:
            if m in per:
                versions.setdefault(per[m].version, []).append(m)
        if len(versions) < 2:
            yield key, per, {}
            continue
        if every_version:
            for v in versions:
                yield key, {m: r for m, r in per.items() if r.version == v}, versions
            continue
        ref = per.get(names[0]) if names else None
        chosen = ref.version if ref is not None else max(versions, key=lambda v: len(versions[v]))
        yield key, {m: r for m, r in per.items() if r.version == chosen}, versions


def by_machine(df: pd.DataFrame, reference: str | None = None, confidence: float = DEFAULT_CONFIDENCE) -> pd.DataFrame:
    """One row per matched case; per machine: median seconds and interval, throughput, the
    speed-up over the reference with its bootstrap interval, fraction of peak. Cases that
    machines ran in different versions are in ``attrs["different_protocol"]``: (case, {version:
    machines})."""
    ok = usable(df)
    names = machines_of(ok, reference) if not ok.empty else []
    rows = []
    different = []
    for key, per, versions in matched_cases(ok, names):
        out: dict[str, Any] = dict(zip(CASE_KEY, key))
        if versions:
            different.append((case_label(pd.Series(out)), versions))
        ref = per.get(names[0]) if names else None
        for m in names:
            r = per.get(m)
            if r is None:
                continue
            out[f"{m} | median_s"] = r.median_s
            out[f"{m} | ci_low_s"] = r.ci95_low_s
            out[f"{m} | ci_high_s"] = r.ci95_high_s
            out[f"{m} | throughput"] = r.throughput
            for col in TIME_TO_QUALITY:
                out[f"{m} | {col}"] = getattr(r, col, None)
            out[f"{m} | energy_j"] = joules = getattr(r, "energy_j", None)
            out[f"{m} | j_per_item"] = joules_per_item(joules, r.median_s, r.throughput, r.throughput_unit)
            out[f"{m} | fraction_of_peak"] = r.fraction_of_peak
            out[f"{m} | version"] = r.version
            if ref is not None and not r.emulated and not ref.emulated:
                a, b, basis = compared_seconds(ref, r)
                if len(a) and len(b):
                    out[f"{m} | speedup_by"] = basis
                    est, lo, hi = ratio_of_medians(a, b, confidence)
                    out[f"{m} | speedup_vs_ref"] = est
                    out[f"{m} | speedup_low"] = None if math.isnan(lo) else lo
                    out[f"{m} | speedup_high"] = None if math.isnan(hi) else hi
        rows.append(out)
    frame = pd.DataFrame(rows)
    frame.attrs["machines"] = names
    frame.attrs["different_protocol"] = different
    return frame


def report_table(df: pd.DataFrame) -> pd.DataFrame | None:
    """The reports' wide table (the reference from ``df.attrs["reference"]``, `--reference`), or
    None when the records come from fewer than two machines: made once per report, shared by the
    side-by-side table and the speed-up figure."""
    if df.empty or df.machine.nunique() < 2:
        return None
    return by_machine(df, df.attrs.get("reference"))


def verdict_matrix(df: pd.DataFrame) -> tuple[list[str], list[list[str]]]:
    """(machines, rows): one row per claim (workload: claim text), one cell per machine with its
    verdicts there ("pass", "fail", "2 pass, 1 inconclusive", "" where not evaluated), after the
    report's correction over each run's claims (``df.attrs["correction"]``, Holm by default)."""
    data = df[(df.control.fillna("") == "") & df.claims.notna()]
    names = machines_of(data) if not data.empty else []
    after = corrections(df)   # {} without a correction: the verdicts as judged
    cells: dict[str, dict[str, list[str]]] = {}
    for r in data.itertuples():
        for j, c in enumerate(verdicts(r.claims)):
            status = after.get((r.Index, j), c.status)
            if status in ("not_applicable", "not_evaluated"):
                continue
            cells.setdefault(f"{r.workload}: {c.text}", {}).setdefault(r.machine, []).append(
                "FAIL" if status == "fail" else status.replace("_", " "))
    rows = []
    for claim in sorted(cells):
        row = [claim]
        for m in names:
            got = cells[claim].get(m, [])
            counts = {v: got.count(v) for v in dict.fromkeys(got)}
            row.append(", ".join(v if n == 1 and len(counts) == 1 else f"{n} {v}" for v, n in counts.items()))
        rows.append(row)
    return names, rows


def _harmonic(effs: list[float]) -> float:
    return 0.0 if not effs or any(e <= 0 for e in effs) else len(effs) / sum(1.0 / e for e in effs)


def platform_set(group: pd.DataFrame, names: list[str]) -> list[str]:
    """The largest set of ``names`` that ran one same case in one work version (ties: the set
    whose machines come first): PP over a set that did run the same work, rather than 0 because
    one machine of the report ran another version."""
    best: list[str] = []
    for _, g in group.groupby(CASE_KEY[1:] + ["version"], dropna=False):
        present = set(g.machine)
        ran = [m for m in names if m in present]
        if len(ran) > len(best):
            best = ran
    return best


def portability(df: pd.DataFrame, seed: int = 0, platforms: list[str] | None = None) -> list[dict[str, Any]]:
    """Per workload: Pennycook's PP over a named set of (non-emulated) machines, ``platforms``
    (substrings of machine names), by default the largest set that ran the same work; application
    efficiency with a bootstrap interval, architectural efficiency where the workload declares a
    fraction of peak, and each machine's efficiencies."""
    ok = usable(df[~df.emulated.astype(bool)])
    every = list(dict.fromkeys(ok.machine))
    if len(every) < 2:
        return []
    chosen = None
    if platforms:
        chosen = [m for m in every if any(p.lower() in m.lower() for p in platforms)]
        if len(chosen) < 2:
            from harness.errors import UsageError
            raise UsageError(f"--platforms {','.join(platforms)}: matches {len(chosen)} machine(s); name 2 or more "
                             f"of: {'; '.join(every)}")
    out = []
    rng = np.random.default_rng(seed)
    for workload, group in ok.groupby("workload", sort=True):
        names = chosen or platform_set(group, every)
        if len(names) < 2:
            continue
        ran = set(group.machine)
        cases = [g for _, g in group.groupby(CASE_KEY[1:] + ["version"], dropna=False) if set(names) <= set(g.machine)]
        cases = [g[g.machine.isin(names)] for g in cases]
        missing = [m for m in names if m not in ran]
        entry: dict[str, Any] = {"workload": workload, "machines": len(names), "cases": len(cases),
                                 "missing": missing, "platforms": names}
        if missing or not cases:
            entry.update(pp_app=0.0, pp_app_low=None, pp_app_high=None, pp_arch=0.0 if missing else None,
                         efficiency={})
            out.append(entry)
            continue
        samples = [{r.machine: samples_array(r.samples) for r in g.itertuples()} for g in cases]

        def app_eff(draws: list[dict[str, float]]) -> dict[str, float]:
            per_machine: dict[str, list[float]] = {m: [] for m in names}
            for medians in draws:
                best = min(medians.values())
                for m in names:
                    per_machine[m].append(best / medians[m])
            return {m: float(np.exp(np.mean(np.log(v)))) for m, v in per_machine.items()}

        point = app_eff([{m: float(np.median(s)) for m, s in case.items()} for case in samples])
        # per case a (machines x draws) array of bootstrap medians; per draw each machine's efficiency
        # (best / its median), geometric mean over cases, harmonic mean over machines
        log_eff = np.zeros((len(names), BOOTSTRAP))
        for case in samples:
            meds = np.stack([bootstrap_medians(case[m], rng, BOOTSTRAP) for m in names])
            log_eff += np.log(meds.min(axis=0) / meds)
        eff = np.exp(log_eff / len(samples))
        boots = np.where((eff > 0).all(axis=0), len(names) / np.sum(1.0 / eff, axis=0), 0.0)
        arch = {}
        fractions: dict[str, list[float]] = {m: [] for m in names}     # one pass, not one per machine
        for g in cases:
            for r in g.itertuples():
                if r.fraction_of_peak is not None and not pd.isna(r.fraction_of_peak):
                    fractions[r.machine].append(r.fraction_of_peak)
        for m in names:
            fr = fractions[m]
            if fr and len(fr) == len(cases):
                arch[m] = float(np.exp(np.mean(np.log(np.clip(fr, 1e-12, None)))))
        entry.update(pp_app=_harmonic(list(point.values())), pp_app_low=float(np.percentile(boots, 2.5)),
                     pp_app_high=float(np.percentile(boots, 97.5)),
                     pp_arch=_harmonic(list(arch.values())) if len(arch) == len(names) else None,
                     efficiency=point, arch_efficiency=arch)
        out.append(entry)
    return out


def _fmt(x: Any, digits: int = 3) -> str:
    return "" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.{digits}g}"


def case_label(row: pd.Series) -> str:
    params = "" if row["params"] in ("{}", "", None) else f" {row['params']}"
    return f"{row['workload']}[{row['size']}]{params} {row['backend']} {row['ranks']} rank(s) x {row['cpus']} thread(s)"


def side_by_side_rows(wide: pd.DataFrame) -> tuple[list[str], list[list[str]]]:
    """The wide table as text: per machine 'median s [interval]', 'x speed-up [interval]', the
    joules per item of work where energy was measured and, for a training case, the time (and
    joules) to its validation target with the trainings that reached it."""
    names = wide.attrs.get("machines", [])
    columns = ["case"] + [f"{m}" for m in names]
    rows = []
    for _, r in wide.iterrows():
        cells = [case_label(r)]
        for i, m in enumerate(names):
            med = r.get(f"{m} | median_s")
            if med is None or (isinstance(med, float) and math.isnan(med)):
                cells.append("")
                continue
            lo, hi = _fmt(r.get(f"{m} | ci_low_s")), _fmt(r.get(f"{m} | ci_high_s"))
            text = f"{_fmt(med)} s" + (f" [{lo}, {hi}]" if lo != hi else "")
            sp = r.get(f"{m} | speedup_vs_ref")
            if i and sp is not None and not (isinstance(sp, float) and math.isnan(sp)):
                lo, hi = _fmt(r.get(f"{m} | speedup_low")), _fmt(r.get(f"{m} | speedup_high"))
                text += f"; x{_fmt(sp)} " + (f"[{lo}, {hi}]" if lo and hi else "(no interval: 1 repeat a side)")
                by = r.get(f"{m} | speedup_by")
                if isinstance(by, str) and by:
                    text += f" by per-seed {by}"
            fop = r.get(f"{m} | fraction_of_peak")
            if fop is not None and not (isinstance(fop, float) and math.isnan(fop)):
                text += f"; {100 * fop:.0f}% of peak"
            per_item = r.get(f"{m} | j_per_item")
            if isinstance(per_item, str) and per_item:
                text += f"; {per_item}"
            text += _time_to_quality_text(r, m)
            cells.append(text)
        if sum(bool(c) for c in cells[1:]) >= 2:   # a case only one machine ran (in this version) compares nothing
            rows.append(cells)
    return columns, rows


def _time_to_quality_text(r: pd.Series, m: str) -> str:
    """'; to target 19.1 s [17.2, 21.0] (5/5)' where the case trains to a validation target."""
    runs = r.get(f"{m} | time_to_quality_runs")
    if not isinstance(runs, str) or not runs:
        return ""
    mean = r.get(f"{m} | time_to_quality_s")
    if mean is None or (isinstance(mean, float) and math.isnan(mean)):
        return f"; to target: not reached ({runs})"
    lo, hi = _fmt(r.get(f"{m} | time_to_quality_low_s")), _fmt(r.get(f"{m} | time_to_quality_high_s"))
    joules = r.get(f"{m} | energy_to_quality_j")
    energy = f", {_fmt(joules)} J" if isinstance(joules, (int, float)) and not math.isnan(joules) else ""
    return f"; to target {_fmt(mean)} s" + (f" [{lo}, {hi}]" if lo and hi else "") + f" ({runs}{energy})"


def different_protocol_rows(wide: pd.DataFrame) -> list[list[str]]:
    """One row per case that machines ran in different workload versions: not compared."""
    return [[case, "; ".join(f"{v} on {', '.join(ms)}" for v, ms in versions.items())]
            for case, versions in wide.attrs.get("different_protocol", [])]


def portability_rows(entries: list[dict[str, Any]]) -> tuple[list[str], list[list[str]]]:
    columns = ["workload", "machines (the set PP is over)", "PP (application efficiency) [95% bootstrap]",
               "PP (architectural efficiency)", "cases on every machine", "efficiency per machine"]
    rows = []
    for e in entries:
        pp = (f"0 (not run on: {', '.join(e['missing'])})" if e["missing"] else
              f"{_fmt(e['pp_app'])} [{_fmt(e['pp_app_low'])}, {_fmt(e['pp_app_high'])}]" if e["cases"] else
              "0 (no case ran on every machine)")
        rows.append([e["workload"], "; ".join(e.get("platforms") or []), pp, _fmt(e.get("pp_arch")) or "n/a (no fraction of peak)", str(e["cases"]),
                     "; ".join(f"{m}: {_fmt(v)}" for m, v in (e.get("efficiency") or {}).items())])
    return columns, rows
