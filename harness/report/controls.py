"""The report's "Controls at the verdict's size": each claim judged on its control case, per machine.

A claim is worth as much as its control: the case that removes the paper's mechanism (an
ablation) or breaks the case outright (a sanity check), where the claim must come out ``fail``.
``harness capture`` runs every captured workload's controls at the size its suite judged the
claims (``OUT/controls/results.jsonl``); this section lists, per machine, what each claim did
there, so a reader sees whether a pass on the machine could have failed at all.
"""
from __future__ import annotations

import pathlib
from collections.abc import Iterable

from harness.output.safe_text import shortened
from harness.report.claim_text import measured_text
from harness.results.store import read_records

CONTROLS_FOLDER = "controls"
COLUMNS = ["machine", "workload", "claim", "size", "control", "kind", "under its control", "measured [interval]"]
NOTE = ("Each claim judged on its control case, as `harness controls` judges it, at the size the capture's "
        "suite judged the claim (the capture ran them: `OUT/controls/`). caught: decided fail there, so the "
        "claim can fail, and does where its mechanism is removed; NOT CAUGHT: it passed or stayed inconclusive "
        "there, so its pass on that machine proves less. An ablation removes only the paper's mechanism; a "
        "sanity check breaks the case outright.")


def control_files(paths: Iterable[str | pathlib.Path]) -> list[pathlib.Path]:
    """The controls' results files of the capture folders among ``paths`` (others have none)."""
    found = []
    for p in map(pathlib.Path, paths):
        f = p / CONTROLS_FOLDER / "results.jsonl"
        if p.is_dir() and (p / "manifest.json").is_file() and f.is_file():
            found.append(f)
    return found


def _outcome(status: str) -> str:
    return "caught (fail)" if status == "fail" else f"NOT CAUGHT ({status})"


def control_rows(paths: Iterable[str | pathlib.Path]) -> list[list[str]]:
    """One row per claim judged on a control case in the captures among ``paths`` (a capture
    resumed runs its controls again: the latest verdict of each claim and size stands)."""
    latest: dict[tuple[str, ...], tuple[str, list[str]]] = {}
    for f in control_files(paths):
        records, _ = read_records(f)   # a bad line costs only itself; the main report says which
        for rec in records:
            if rec.control is None or rec.control.role != "control":
                continue
            for v in rec.claims:
                if v.control is None:
                    continue
                row = [shortened(rec.machine), rec.workload.name, v.text, rec.size, v.control.get("why", ""),
                       v.control.get("kind", ""), _outcome(v.status), measured_text(v)]
                key = (row[0], row[1], row[2], row[3])
                if key not in latest or latest[key][0] <= rec.created:
                    latest[key] = (rec.created, row)
    return [row for _, (_, row) in sorted(latest.items())]
