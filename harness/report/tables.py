"""The report's tables as plain rows: one table per workload, and the claim reproduction summary."""
from __future__ import annotations

import itertools
import json
from collections.abc import Iterable, Iterator
from typing import Any

import pandas as pd

from harness.judging.verdicts import counts_text
from harness.judging.verdicts import rejudge
from harness.judging.multiplicity import NAMES
from harness.report.claim_text import VERDICT_TEXT, interval_source, measured_text, num_text, verdict_text
from harness.report.units import energy_text
from harness.report.controls import COLUMNS as CONTROL_COLUMNS, NOTE as CONTROLS_NOTE, control_rows
from harness.report.verdicts import correcting, corrections, verdicts
from harness.output.safe_text import markdown_cell, markdown_text

CASE_COLUMNS = ["params", "size", "machine", "backend", "library", "ranks x threads", "status",
                "median (s)", "95% CI (s)", "throughput", "% of peak", "comm frac", "comm imbalance",
                "energy", "claims", "reason"]
# Marks a comm fraction whose Allreduce calls the Python wrapper counted (about 0.5 us more per
# call than the C hook): compare such numbers with care against unmarked ones.
PY_MARK = " (py)"
PY_NOTE = ("comm frac marked (py): Allreduce was counted by the Python wrapper (~0.5 us per call more "
           "than the PMPI hook); see protocol.allreduce_profiler_note in the record")
# Marks a time measured under binary translation (qemu-user): results and claims hold, times do not.
EMU_MARK = " (emulated)"
EMU_NOTE = ("times marked (emulated) ran under binary translation (qemu-user): the results and claims are "
            "that architecture's, the timings are not comparable with native ones")
CLAIM_COLUMNS = ["workload", "claim", "paper value", "measured [interval]", "verdict", "interval from", "params",
                 "machine", "backend", "ranks x threads", "source"]


def case_rows(df: pd.DataFrame) -> dict[str, list[list[str]]]:
    """{workload: rows} in a stable order (params, machine, backend, ranks, threads)."""
    return dict(iter_case_rows(df))


def iter_case_rows(df: pd.DataFrame) -> Iterator[tuple[str, list[list[str]]]]:
    """(workload, its rows), one workload at a time: a report of 100,000 records never holds
    every table row at once."""
    if df.empty:
        return
    for workload in sorted(df.workload.unique()):
        group = df[df.workload == workload].sort_values(["params", "machine", "backend", "ranks", "threads", "created"])
        rows = []
        for r in group.itertuples(index=False):
            ci = "" if r.ci95_low_s is None or pd.isna(r.ci95_low_s) else f"[{r.ci95_low_s:.4g}, {r.ci95_high_s:.4g}]"
            rows.append([
                r.params if r.params != "{}" else "", r.size, r.machine, r.backend, r.library,
                f"{r.ranks}x{r.threads}", r.status + (" (unstable)" if r.unstable else "")
                + (f" ({r.control} of a control)" if r.control else ""),
                num_text(r.median_s) + (EMU_MARK if r.emulated and num_text(r.median_s) else ""), ci,
                f"{num_text(r.throughput)} {r.throughput_unit}" if num_text(r.throughput) else "",
                num_text(None if r.fraction_of_peak is None else 100 * r.fraction_of_peak, "{:.1f}%")
                or ("not given: " + r.peak_problem if getattr(r, "peak_problem", "") else ""),
                num_text(r.comm_fraction, "{:.3f}") + (PY_MARK if r.allreduce_profiler == "python" else ""),
                num_text(r.comm_imbalance, "{:.3f}"),
                energy_text(r.energy_j, r.median_s, r.throughput, r.throughput_unit),
                claims_text(r),
                (r.reason or "").splitlines()[0][:160] if r.reason else "",
            ])
        yield str(workload), rows


def energy_note(df: pd.DataFrame) -> str:
    """Why a report has no energy figures (the records' own reason), or ''."""
    if "energy_j" not in df or df.energy_j.notna().any():
        return ""
    reasons = [m for m in df.get("energy_method", []) if m]
    return reasons[0] if reasons else ""


def table_notes(rows: list[list[str]]) -> str:
    """The footnotes of a table: comm fractions counted by the Python wrapper, emulated timings."""
    frac, median = CASE_COLUMNS.index("comm frac"), CASE_COLUMNS.index("median (s)")
    notes = [PY_NOTE if any(row[frac].endswith(PY_MARK) for row in rows) else "",
             EMU_NOTE if any(row[median].endswith(EMU_MARK) for row in rows) else ""]
    return "; ".join(n for n in notes if n)


COUNT_COLUMNS = {"pass": "claims_passed", "fail": "claims_failed", "inconclusive": "claims_inconclusive",
                 "not_evaluated": "claims_not_evaluated", "not_applicable": "claims_not_applicable",
                 "premise_absent": "claims_premise_absent"}


def claims_text(r: Any) -> str:
    """'2 pass, 1 inconclusive, 3 not applicable' for one frame row, from its count columns."""
    return counts_text({s: int(getattr(r, col) or 0) for s, col in COUNT_COLUMNS.items()})


def claim_rows(df: pd.DataFrame) -> list[list[str]]:
    """Every claim of every ok case that applies to it (a claim limited by ``when`` to other
    params, or the baseline case of a relative claim, is left out, as are the cases of
    ``harness controls``): the table the papers are checked against. Claims that apply but could
    not be evaluated stay, with the reason; a claim whose plugin declared no control says so."""
    return list(iter_claim_rows(df))


def iter_claim_rows(df: pd.DataFrame) -> Iterator[list[str]]:
    """:func:`claim_rows`, one at a time; with ``df.attrs["correction"]`` (holm, bh) a column after
    the verdict gives the verdict after that correction over the claims of the record's run."""
    if df.empty:
        return
    after = corrections(df)
    for r in df.sort_values(["workload", "params", "machine", "backend"]).itertuples():
        if r.status != "ok" or r.control:
            continue
        for j, c in enumerate(verdicts(r.claims)):
            if c.status == "not_applicable":
                continue
            row = [r.workload, c.text, "" if c.paper_value is None else str(c.paper_value),
                   measured_text(c), verdict_text(c), interval_source(c),
                   swept_text(json.loads(r.params)) if r.params else "",
                   r.machine, r.backend, f"{r.ranks}x{r.threads}", c.source]
            if after:
                status = after.get((r.Index, j), c.status)
                row.insert(5, VERDICT_TEXT.get(status, status))
            yield row


def claim_columns(df: pd.DataFrame) -> list[str]:
    """The reproduction summary's columns, with the corrected verdict's where the report corrects."""
    method = correcting(df)
    return CLAIM_COLUMNS if method is None else [*CLAIM_COLUMNS[:5], f"after {NAMES[method]}", *CLAIM_COLUMNS[5:]]


def swept_text(swept: dict[str, Any]) -> str:
    """A case named by what distinguishes it (the params a suite or sweep set): 'msf=64'."""
    return ", ".join(f"{k}={v}" for k, v in swept.items())


def claim_tally(df: pd.DataFrame) -> str:
    """The headline over the ok, non-control cases: with a correction (the default, Holm), the
    counts after it first, then as judged: 'after Holm (family-wise), each run's claims one
    family: 81 pass, 5 FAIL, 34 inconclusive; as judged: 92 pass, 7 FAIL, 21 inconclusive; 160
    not applicable (not listed)'."""
    judged = df[(df.status == "ok") & (df.control == "")]
    counts = {s: int(judged[col].sum()) for s, col in COUNT_COLUMNS.items()}
    order = ("pass", "fail", "inconclusive", "not_evaluated", "premise_absent")
    shown = ", ".join(f"{counts[s]} {VERDICT_TEXT[s]}" for s in order if counts[s]) or "none"
    skipped = f"{counts['not_applicable']} not applicable (not listed)" if counts["not_applicable"] else ""
    method = correcting(df)
    if method is not None:
        after = [status for status in corrections(df).values() if status != "not_applicable"]
        kinds = list(dict.fromkeys([*order, *after]))
        text = ", ".join(f"{after.count(s)} {VERDICT_TEXT.get(s, s)}" for s in kinds if after.count(s)) or "none"
        shown = f"after {NAMES[method]}, each run's claims one family: {text}; as judged: {shown}"
    return "; ".join(t for t in (shown, skipped) if t)


def claim_note(df: pd.DataFrame) -> str:
    """What the reproduction summary's counts and verdict columns are: the family and the method."""
    method = correcting(df)
    if method is None:
        return "Each verdict as judged on its own interval, with no correction over the claims read together."
    return (f"Each verdict as judged on its own interval, and after {NAMES[method]} over the family of every claim "
            "judged in one run (one `harness run` or capture; records of several runs are several families): a decided "
            "verdict whose interval does not survive the correction reads inconclusive there. The headline counts the "
            "verdicts after the correction first; `--correction bh` or `none` changes the method.")


def rejudged(df: pd.DataFrame, confidence: float | None) -> pd.DataFrame:
    """``df`` with every claim judged again at ``confidence`` from the replicates its verdict
    keeps (verdicts of older records, without them, stay as they were); None: unchanged."""
    if confidence is None or df.empty:
        return df
    out = df.copy()
    judged = [[rejudge(c, confidence) for c in verdicts(claims)] for claims in df["claims"]]
    out["claims"] = [json.dumps([c.to_json() for c in row], separators=(",", ":")) for row in judged]
    for status, col in COUNT_COLUMNS.items():
        if status != "not_applicable":
            out[col] = [sum(c.status == status for c in row) for row in judged]
    return out


def section(title: str, note: str, columns: list[str], rows: Iterable[list[str]]) -> str:
    """A Markdown section: its heading, its note (if any), its table."""
    return f"\n\n## {markdown_text(title)}\n\n" + (f"{markdown_text(note)}\n\n" if note else "") + markdown_table(columns, rows)


def markdown_table(columns: list[str], rows: Iterable[list[str]]) -> str:
    """A GitHub-flavoured Markdown table; every header and body cell passes ``markdown_cell`` (a
    record's string cannot end the table or inject markup)."""
    return "\n".join(markdown_lines(columns, rows))


def markdown_lines(columns: list[str], rows: Iterable[list[str]]) -> Iterator[str]:
    yield "| " + " | ".join(map(markdown_cell, columns)) + " |"
    yield "|" + "---|" * len(columns)
    for row in rows:
        yield "| " + " | ".join(map(markdown_cell, row)) + " |"


def nonempty(rows: Iterator[list[str]]) -> Iterator[list[str]] | None:
    """``rows`` as they were, or None when there are none (a generator cannot say so itself)."""
    first = next(rows, None)
    return None if first is None else itertools.chain([first], rows)


def markdown_parts(df: pd.DataFrame, problems: list[str]) -> Iterator[str]:
    """The Markdown report piece by piece (written as it is made)."""
    energy = energy_note(df)
    yield (f"# hpml-harness report\n\n{len(df)} record(s) from {df['file'].nunique() if not df.empty else 0} file(s)."
           + (f" {energy}." if energy else ""))
    for title, columns, rows, note in overview_sections(df):
        yield section(title, note, columns, rows)
    yield f"\n\n## Reproduction summary: paper claims ({claim_tally(df)})\n\n" + markdown_text(claim_note(df)) + "\n\n"
    claims = nonempty(iter_claim_rows(df))
    if claims is None:
        yield "No claims were evaluated."
    else:
        for i, line in enumerate(markdown_lines(claim_columns(df), claims)):
            yield ("\n" if i else "") + line
    rows = control_rows(df.attrs.get("inputs") or [])
    if rows:
        yield section("Controls at the verdict's size", CONTROLS_NOTE, CONTROL_COLUMNS, rows)
    for title, columns, rows, note in machine_sections(df):
        yield section(title, note, columns, rows)
    for workload, rows in iter_case_rows(df):
        note = table_notes(rows)
        yield (f"\n\n## {markdown_text(workload)}\n\n" + markdown_table(CASE_COLUMNS, rows)
               + (f"\n\n{markdown_text(note)}" if note else ""))
    from harness.report.placement import NOTE as PLACEMENT_NOTE, placement_rows
    from harness.report.run_times import NOTE as RUNS_NOTE, run_rows

    columns, rows = placement_rows(df)
    if rows:
        yield section("Compute phases on their machine", PLACEMENT_NOTE, columns, rows)
    columns, rows = run_rows(df)
    if rows:
        yield section("Runs and their time", RUNS_NOTE, columns, rows)
    if problems:
        yield "\n\n## Unreadable lines\n\n" + "\n".join(f"- {markdown_text(p)}" for p in problems)
    yield "\n"


def overview_sections(df: pd.DataFrame) -> Iterator[tuple[str, list[str], list[list[str]], str]]:
    """What a report of 2+ machines opens with: the machines (what each is, its peaks and where
    they come from), the speed-up per workload over the reference, the verdict matrix."""
    from harness.report import machines, overview

    if df.empty or df.machine.nunique() < 2:
        return
    columns, rows = overview.machine_rows(df)
    yield ("Machines", columns, rows,
           "Each machine as its facts say (harness.hardware.identity), never named after a hardware profile it "
           "only resembles. fp64 peak: a profile's for its own SKU, else derived from the core and the clock its "
           "cores were measured to run at (the reported clock on records made before the clock was measured, "
           "which a VM's turbo beats); measured: the roofline's best fp64 GEMM here, with its fraction of the peak.")
    columns, rows = overview.speedup_matrix(df, df.attrs.get("reference"))
    if rows:
        names = machines.machines_of(df, df.attrs.get("reference"))
        ref = names[0]
        why = ("chosen with --reference" if df.attrs.get("reference") else machines.default_reference(df)[1])
        shared = machines.partners(df, ref)
        apart = [m for m in names[1:] if m not in shared]
        note = ("Geometric mean over the cases both machines ran in the same workload version of median(reference "
                f"s) / median(machine s) [95% bootstrap interval]; above 1: faster than the reference. The reference, "
                f"{ref}: {why}." + "".join(f" {m} shares no case of the same work with the reference: see the "
                                           "pairwise table." for m in apart))
        yield (f"Speed-up per workload over {ref}", columns, rows, note)
    columns, rows = overview.pairwise_matrix(df)
    if rows:
        yield ("Speed-up between every pair of machines", columns, rows,
               "Per pair, the geometric mean over every case both ran in the same work version of median(row "
               "machine s) / median(column machine s) [95% bootstrap interval] (cases): above 1, the column's "
               "machine is faster.")
    names, rows = machines.verdict_matrix(df)
    if rows:
        method = correcting(df)
        yield ("Claims per machine", ["claim", *names], rows,
               "One row per claim, one column per machine: the verdicts of that machine's cases"
               + (f", after {NAMES[method]} over the claims of each run (the family: every claim one `harness run` "
                  "judged; a decided verdict whose interval does not survive the correction reads inconclusive; "
                  "--correction none gives them as judged)." if method else ", as judged (no correction)."))


def machine_sections(df: pd.DataFrame, wide: pd.DataFrame | None = None) -> Iterator[tuple[str, list[str], list[list[str]], str]]:
    """(title, columns, rows, note) of the detailed sections about machines, after the overview:
    the matched cases per machine (``wide``: the report's :func:`~harness.report.machines.report_table`,
    made here when not given) and the cases not compared for their versions; the roofline
    model of the profiles; performance portability across the machines."""
    from harness.report import machines

    several = not df.empty and df.machine.nunique() >= 2
    if several:
        wide = wide if wide is not None else machines.report_table(df)
        if not wide.empty and len(wide.attrs["machines"]) > 1:
            columns, table = machines.side_by_side_rows(wide)
            yield ("Machines side by side", columns, table,
                   f"Per case that 2+ machines ran in the same workload version: median seconds per repeat [95% "
                   f"interval]; x speed-up over {wide.attrs['machines'][0]} (the reference) [95% bootstrap "
                   "interval]; % of the machine's peak where the workload declares it and the peak is the "
                   "machine's. Emulated machines show no speed-up (their timings are not the machine's).")
            different = machines.different_protocol_rows(wide)
            if different:
                yield ("Not compared: different protocol", ["case", "workload versions"], different,
                       "These cases measured different work: another protocol version of the workload (its "
                       "author changed the data, the model, the timed code or what a figure means; "
                       "plugins/versions.lock says why), another work digest, or records without a version: "
                       "their times are not compared.")
    if not df.empty:
        yield from model_sections(df)
    entries = machines.portability(df, platforms=df.attrs.get("platforms")) if several else []
    df.attrs["portability"] = entries      # the html report draws them as a cascade plot
    if entries:
        columns, table = machines.portability_rows(entries)
        chosen = df.attrs.get("platforms")
        yield ("Performance portability", columns, table,
               "Pennycook's PP: the harmonic mean of a workload's efficiency over a set of machines, 0 when one "
               "of the set did not run it. The set: " + (f"the machines --platforms {','.join(chosen)} names"
               if chosen else "per workload, the largest set of machines that ran one same case in one work "
               "version (--platforms names another)") + " (docs/reports.md says how it is computed).")


def model_sections(df: pd.DataFrame) -> Iterator[tuple[str, list[str], list[list[str]], str]]:
    """The roofline model of every hardware profile for cases that report their work (a model,
    in its own table, never mixed with measurements)."""
    from harness.report.model import model_rows, registered_profiles

    columns, rows = model_rows(df, registered_profiles())
    if rows:
        yield ("Model: predicted seconds per repeat on each hardware profile (not measured)", columns, rows,
               "A roofline model from the work each case reports (work_flops_fp64/fp32, work_bytes) and each "
               "profile's whole-node peaks, the kinds of work one after another: t = sum flops / peak + bytes / "
               "bandwidth. Where the case ran on a machine matching the profile: measured / predicted.")
