"""The table a run ends with: what did not run, then every claim with its cases and verdicts.

Written for a person reading a terminal or a CI log: cases that failed or timed out come first,
with their reason; then one group per workload and claim, one line per case it was judged on (a
case named by what sets it apart from the workload's other cases in the run), with the measured
figure, its interval and the verdict; claims that do not apply to a case are counted, not listed.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rich.console import Group
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from harness.plan import Case
from harness.report.tables import interval_source, measured_text, verdict_text
from harness.results.record import Record

VERDICT_STYLE = {"pass": "green", "fail": "red", "inconclusive": "yellow"}


def case_names(cases: Sequence[Case]) -> dict[str, str]:
    """case_id -> the params, backend and ranks that differ between cases of the same workload
    ('msf=1 r2'; the workload's only case is named 'as planned')."""
    by_workload: dict[str, list[Case]] = {}
    for c in cases:
        by_workload.setdefault(c.workload, []).append(c)
    names = {}
    for group in by_workload.values():
        def varies(get: Any) -> bool:
            return len({repr(get(c)) for c in group}) > 1
        keys = [k for k in dict.fromkeys(k for c in group for k in c.params) if varies(lambda c, k=k: c.params.get(k))]
        for c in group:
            bits = [f"{k}={c.params.get(k)}" for k in keys]
            if varies(lambda c: c.backend):
                bits.append(str(c.backend))
            if varies(lambda c: c.size):
                bits.append(c.size)
            if varies(lambda c: (c.ranks, c.threads)):
                bits.append(f"r{c.ranks}x{c.threads}")
            names[c.case_id] = " ".join(bits) or "as planned"
    return names


def closing_table(finished: Sequence[tuple[Case, Record]]) -> Group:
    """The failed cases (with reasons), then the claims table; see the module's docstring."""
    names = case_names([c for c, _ in finished])
    parts: list[Any] = []
    bad = [(c, r) for c, r in finished if r.status in ("failed", "timeout")]
    if bad:
        parts.append(Text(f"{len(bad)} case(s) did not run ok:", style="bold red"))
        for c, r in bad:
            reason = (r.reason or "").splitlines()[0][:200] if r.reason else "no reason recorded"
            parts.append(Text(f"  {c.label}: {r.status}: {reason}"))
    t = Table(title="paper claims in this run", title_justify="left", show_lines=False)
    for col in ("workload", "claim", "paper", "case", "measured [interval]", "verdict", "interval from"):
        t.add_column(col, overflow="fold")
    groups: dict[tuple[str, str], list[tuple[Case, Any]]] = {}
    not_applicable = 0
    for c, r in finished:
        for v in r.claims:
            if v.status == "not_applicable":
                not_applicable += 1
                continue
            groups.setdefault((c.workload, v.text), []).append((c, v))
    for (workload, text), rows in sorted(groups.items(), key=lambda kv: kv[0][0]):
        for i, (c, v) in enumerate(rows):
            style = VERDICT_STYLE.get(v.status, "dim")
            t.add_row(escape(workload) if i == 0 else "", escape(text) if i == 0 else "",
                      escape("" if v.paper_value is None or i else str(v.paper_value)), escape(names[c.case_id]),
                      escape(measured_text(v)), f"[{style}]{escape(verdict_text(v))}[/]", escape(interval_source(v)),
                      end_section=i == len(rows) - 1)
    if groups:
        parts.append(t)
    if not_applicable:
        parts.append(Text(f"({not_applicable} claim(s) do not apply to the case they were checked on: not listed)",
                          style="dim"))
    return Group(*parts)
