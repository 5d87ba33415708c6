"""The tables a run ends with: what did not run, the claims that failed or are undecided in full,
then one line per claim that passed.

Written for a person reading a terminal or a CI log, to fit one screen for suite all: cases that
failed or timed out come first, with their reason; then every fail and inconclusive verdict (the
case named by the params its suite or sweep set, the measured figure, its interval, where the
interval came from); then each claim that passed everywhere it was judged, in one line with the
cases. Claims that do not apply to a case are counted, not listed.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rich import box
from rich.console import Group
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from harness.judging.multiplicity import DEFAULT_CORRECTION, corrected_statuses, summary
from harness.plan import Case
from harness.report.claim_text import VERDICT_TEXT, interval_source, measured_text, verdict_text
from harness.results.record import Record
from harness.judging.intervals import DEFAULT_CONFIDENCE

VERDICT_STYLE = {"pass": "green", "fail": "red", "inconclusive": "yellow"}
PAPER_SHOWN = 24   # characters of a paper value the closing table prints (a figure, not a sentence)


def case_names(cases: Sequence[Case]) -> dict[str, str]:
    """case_id -> the params its suite or sweep set ('msf=64'), with the backend, size and ranks
    x threads where those differ between cases of the same workload; 'defaults' when nothing was set."""
    by_workload: dict[str, list[Case]] = {}
    for c in cases:
        by_workload.setdefault(c.workload, []).append(c)
    names = {}
    for group in by_workload.values():
        def varies(get: Any) -> bool:
            return len({repr(get(c)) for c in group}) > 1
        for c in group:
            bits = [f"{k}={v}" for k, v in c.swept.items()]
            if varies(lambda c: c.backend):
                bits.append(str(c.backend or "default"))
            if varies(lambda c: c.size):
                bits.append(c.size)
            if varies(lambda c: (c.ranks, c.threads)):
                bits.append(f"r{c.ranks}x{c.threads}")
            names[c.case_id] = " ".join(bits) or "defaults"
    return names


def closing_table(finished: Sequence[tuple[Case, Record]], correction: str = DEFAULT_CORRECTION,
                  confidence: float = DEFAULT_CONFIDENCE) -> Group:
    """The failed cases (with reasons), the undecided and failed claims, the passed ones; see the
    module's docstring. Each verdict also says what it is after ``correction`` over the run's
    claims (harness.judging.multiplicity), where that differs."""
    names = case_names([c for c, _ in finished])
    every = [v for _, r in finished for v in r.claims]
    after_list = corrected_statuses(every, correction, confidence)
    after = {id(v): a for v, a in zip(every, after_list)}

    def mark(v: Any) -> str:
        a = after.get(id(v), v.status)
        return "" if a == v.status else f" ({a} after {correction})"
    parts: list[Any] = []
    bad = [(c, r) for c, r in finished if r.status in ("failed", "timeout")]
    if bad:
        parts.append(Text(f"{len(bad)} case(s) did not run ok:", style="bold red"))
        for c, r in bad:
            reason = (r.reason or "").splitlines()[0][:200] if r.reason else "no reason recorded"
            parts.append(Text(f"  {c.label}: {r.status}: {reason}"))
    groups: dict[tuple[str, str], list[tuple[Case, Any]]] = {}
    not_applicable = 0
    for c, r in finished:
        for v in r.claims:
            if v.status == "not_applicable":
                not_applicable += 1
                continue
            groups.setdefault((c.workload, v.text), []).append((c, v))
    ordered = sorted(groups.items(), key=lambda kv: kv[0][0])
    open_ = [(k, [(c, v) for c, v in rows if v.status != "pass"]) for k, rows in ordered]
    open_ = [(k, rows) for k, rows in open_ if rows]
    if open_:
        t = Table(title="paper claims not passed in this run", title_justify="left", box=box.SIMPLE_HEAD,
                  pad_edge=False)
        for col, ratio in (("workload", 1), ("claim (paper)", 3), ("case", 2), ("measured [interval]", 2),
                           ("verdict", 1), ("interval from", 2)):
            t.add_column(col, overflow="fold", ratio=ratio)
        for (workload, text), rows in open_:
            # the paper's figure where it is one; its words are in `harness list claims` and the report
            paper = next((f" (paper: {v.paper_value})" for _, v in rows
                          if v.paper_value is not None and len(str(v.paper_value)) <= PAPER_SHOWN), "")
            for i, (c, v) in enumerate(rows):
                style = VERDICT_STYLE.get(v.status, "dim")
                t.add_row(escape(workload) if i == 0 else "", escape(text + paper) if i == 0 else "",
                          escape(names[c.case_id]), escape(measured_text(v)),
                          f"[{style}]{escape(closing_verdict(v) + mark(v))}[/]", escape(interval_source(v)))
        parts.append(t)
    passes = [(k, [(c, v) for c, v in rows if v.status == "pass"], len(rows)) for k, rows in ordered]
    passes = [p for p in passes if p[1]]
    if passes:
        parts.append(Text("paper claims passed (one line per claim: the cases it passed on, measured)", style="bold"))
        for (workload, text), rows, judged in passes:
            share = f"{len(rows)}" if len(rows) == judged else f"{len(rows)} of {judged}"
            cases = "; ".join(f"{names[c.case_id]}: {measured_text(v)}{mark(v)}" for c, v in rows)
            how = interval_source(rows[0][1])
            line = Text.assemble(("pass ", "green"), f"{workload}: {text} ({share}{', ' + how if how else ''}) {cases}")
            line.no_wrap, line.overflow = True, "ellipsis"
            parts.append(line)
    if not_applicable:
        parts.append(Text(f"({not_applicable} claim(s) do not apply to the case they were checked on: not listed)",
                          style="dim"))
    if groups and correction != "none":
        parts.append(Text(summary([v.status for v in every], after_list, correction)
                          + " (--correction; docs/reports.md)", style="dim"))
    return Group(*parts)


def closing_verdict(v) -> str:
    """The verdict as the closing table shows it: a premise's reason is long and lives in the
    report and `harness show`, so here only the words 'premise absent' (the table fits a screen)."""
    if v.status == "premise_absent":
        return VERDICT_TEXT["premise_absent"] + ("" if v.has_control else " (no control declared)")
    return verdict_text(v)
