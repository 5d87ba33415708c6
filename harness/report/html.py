"""A single self-contained HTML report: inline CSS, plots embedded as PNG data, no script, no network.

Every piece of text from a record is escaped, so a workload name or a reason cannot inject markup.
"""
from __future__ import annotations

import base64
import html
from collections.abc import Iterable, Iterator

import pandas as pd

from harness.report import plots
from harness.report.controls import COLUMNS as CONTROL_COLUMNS, NOTE as CONTROLS_NOTE, control_rows
from harness.report.placement import NOTE as PLACEMENT_NOTE, placement_rows
from harness.report.run_times import NOTE as RUNS_NOTE, run_rows
from harness.report.machines import report_table
from harness.report.tables import (CASE_COLUMNS, claim_columns, claim_note, claim_tally, energy_note, iter_case_rows,
                                   iter_claim_rows, machine_sections, nonempty, overview_sections, table_notes)

CSS = """body{font-family:system-ui,sans-serif;margin:2em;color:#222}table{border-collapse:collapse;
font-size:12px;margin:1em 0}th,td{border:1px solid #ccc;padding:3px 6px;text-align:left;vertical-align:top}
th{background:#f0f0f0}td.FAIL{color:#b00;font-weight:bold}td.pass{color:#070}td.inconclusive{color:#a60}img{max-width:100%;
border:1px solid #eee;margin:0.5em 0}.note{color:#666}ol.legend{list-style:none;padding-left:0;font-size:12px}"""


def _table_parts(columns: list[str], rows: Iterable[list[str]], verdict_col: int | None = None) -> Iterator[str]:
    head = "".join(f"<th>{html.escape(c)}</th>" for c in columns)
    yield f"<table><thead><tr>{head}</tr></thead><tbody>"
    for row in rows:
        cells = []
        for i, cell in enumerate(row):
            cls = ""
            if i == verdict_col:
                cls = f' class="{next((k for k in ("FAIL", "pass", "inconclusive") if cell.startswith(k)), "")}"'
            cells.append(f"<td{cls}>{html.escape(str(cell))}</td>")
        yield "<tr>" + "".join(cells) + "</tr>"
    yield "</tbody></table>"


def _img(title: str, png: bytes, legend: list[str] | None = None) -> str:
    """A figure; ``legend``: what the plot's numbered labels stand for, as its caption."""
    data = base64.b64encode(png).decode()
    caption = ("<figcaption class='note'><ol class='legend'>" + "".join(
        f"<li>{html.escape(item)}</li>" for item in legend) + "</ol></figcaption>") if legend else ""
    return f'<figure><img alt="{html.escape(title)}" src="data:image/png;base64,{data}">{caption}</figure>'


def html_parts(df: pd.DataFrame, problems: list[str], models: list[str] | None = None,
               extrap: str | None = None) -> Iterator[str]:
    """The HTML report piece by piece (written as it is made)."""
    energy = energy_note(df)
    yield (f"<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'><title>hpml-harness report</title>"
             f"<style>{CSS}</style></head><body><h1>hpml-harness report</h1>"
             f"<p class='note'>{len(df)} record(s) from {df['file'].nunique() if not df.empty else 0} file(s)."
             f"{html.escape(' ' + energy + '.') if energy else ''}</p>")
    for title, columns, rows, note in overview_sections(df):
        yield f"\n<h2>{html.escape(title)}</h2>\n<p class='note'>{html.escape(note)}</p>"
        yield from _table_parts(columns, rows, verdict_col=None)
    yield (f"\n<h2>Reproduction summary: paper claims ({html.escape(claim_tally(df))})</h2>\n"
           f"<p class='note'>{html.escape(claim_note(df))}</p>\n")
    claims = nonempty(iter_claim_rows(df))
    if claims is None:
        yield "<p>No claims were evaluated.</p>"
    else:
        yield from _table_parts(claim_columns(df), claims, verdict_col=4)
    controls = control_rows(df.attrs.get("inputs") or [])
    if controls:
        yield f"\n<h2>Controls at the verdict's size</h2>\n<p class='note'>{html.escape(CONTROLS_NOTE)}</p>"
        yield from _table_parts(CONTROL_COLUMNS, controls, verdict_col=None)
    wide = report_table(df)   # one bootstrap per case and machine, for the table and the figure
    for title, columns, rows, note in machine_sections(df, wide):
        yield f"\n<h2>{html.escape(title)}</h2>\n<p class='note'>{html.escape(note)}</p>"
        yield from _table_parts(columns, rows, verdict_col=None)
    for title, png, legend in plots.machine_figures(wide):
        yield "\n" + _img(title, png, legend)
    for title, png, legend in plots.cascade_figure(df.attrs.get("portability") or []):
        yield "\n" + _img(title, png, legend)
    if models and extrap:
        from harness.report.scaling_models import model_figures

        yield ("\n<h2>Scaling models (Extra-P)</h2>\n<p class='note'>Every sweep over "
               + html.escape(", ".join(models)) + ": the measured points and Extra-P's model of the seconds per "
               "repeat (docs/analysis.md).</p>")
        for title, png, caption in model_figures(df.attrs.get("inputs") or [], models, extrap):
            yield "\n" + _img(title, png, caption)
    for workload, table_rows in iter_case_rows(df):
        yield f"\n<h2>{html.escape(workload)}</h2>\n"
        yield from _table_parts(CASE_COLUMNS, table_rows)
        note = table_notes(table_rows)
        if note:
            yield f"\n<p class='note'>{html.escape(note)}</p>"
        for title, png in plots.workload_figures(df[df.workload == workload], workload):
            yield "\n" + _img(f"{workload}: {title}", png)
    roof = plots.roofline_figure(df) if not df.empty else None
    if roof:
        yield "\n<h2>Measured rooflines</h2>" + _img("measured rooflines", roof)
    columns, rows = placement_rows(df)
    if rows:
        yield f"\n<h2>Compute phases on their machine</h2>\n<p class='note'>{html.escape(PLACEMENT_NOTE)}</p>"
        yield from _table_parts(columns, rows, verdict_col=None)
        for title, png in plots.placement_figures(df):
            yield "\n" + _img(title, png)
    columns, rows = run_rows(df)
    if rows:
        yield f"\n<h2>Runs and their time</h2>\n<p class='note'>{html.escape(RUNS_NOTE)}</p>"
        yield from _table_parts(columns, rows, verdict_col=None)
    if problems:
        yield "\n<h2>Unreadable lines</h2><ul>" + "".join(f"<li>{html.escape(p)}</li>" for p in problems) + "</ul>"
    yield "\n</body></html>"
