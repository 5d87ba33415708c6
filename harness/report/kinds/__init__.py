"""The kinds of report `harness report` writes, one module each, registered in :data:`KINDS`.

A kind's module defines ``write(df, problems, options, out) -> str | None``: it writes the report
of the records in ``df`` (the frame :func:`harness.results.frame.load_frame` read with the kind's
``reads``) to ``out`` (``None``: its default, or stdout where the kind streams), and returns the
line to print after writing a file (``None`` when it wrote to stdout). Adding a kind is one module
here and one row in :data:`KINDS` (docs/architecture.md, "Adding a report kind").
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class ReportKind:
    """One output kind: its name (``--format``), its module, and what it reads of a record
    beside the flat columns (the rest is never held in memory)."""

    name: str
    module: str
    reads: frozenset[str]
    judged_again: bool        # its claims are judged again by the current claims from their replicates
    help: str = ""

    def writer(self) -> Any:
        return importlib.import_module(self.module)


@dataclass
class ReportOptions:
    """What the command line asked of a report, beside the records."""

    stamp: str | None = None          # md: the stamp text (how docs/results.md is made)
    by_machine: bool = False          # csv/parquet: the wide table of matched cases per machine
    reference: str | None = None      # the reference machine of speed-ups, by a part of its name
    extra: dict[str, Any] = field(default_factory=dict)


TABLE_READS = frozenset({"metrics"})
KINDS: dict[str, ReportKind] = {k.name: k for k in (
    ReportKind("md", "harness.report.kinds.md", frozenset({"claims", "samples", "work_metrics", "phases"}), True,
               "Markdown, streamed to stdout or --out"),
    ReportKind("html", "harness.report.kinds.html",
               frozenset({"claims", "phases", "ceiling_metrics", "ceilings", "samples", "work_metrics"}), True,
               "one self-contained page with plots (default report.html)"),
    ReportKind("csv", "harness.report.kinds.csv", TABLE_READS, False, "one row per record (stdout or --out)"),
    ReportKind("parquet", "harness.report.kinds.parquet", TABLE_READS, False,
               "one row per record (default report.parquet; needs pyarrow)"),
    ReportKind("jsonl", "harness.report.kinds.jsonl", TABLE_READS, False,
               "one JSON object per record (stdout or --out)"),
)}
BY_MACHINE_READS = frozenset({"samples"})
