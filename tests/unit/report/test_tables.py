"""harness/report/tables.py in-process: Markdown tables a record's text cannot break."""
from __future__ import annotations

from harness import Claim
from harness.report.claim_text import measured_text, verdict_text
from harness.report.tables import markdown_table, section


def test_cells_cannot_end_the_table_or_add_markup() -> None:
    text = markdown_table(["a", "b"], [["x | y", "line\nbreak"], ["<script>", "`z`"]])
    lines = text.splitlines()
    assert len(lines) == 4 and lines[1] == "|---|---|"
    assert all(line.count(" | ") == 1 for line in lines[2:]), text
    assert "<script>" not in text
    assert section("T", "", ["a"], [["1"]]).startswith("\n\n## T\n\n| a |")


def test_a_verdict_is_shown_with_its_interval() -> None:
    verdict = Claim("acc", ">=", 0.9).evaluate({"acc": [0.93, 0.95, 0.94, 0.96, 0.92]})
    assert verdict.status == "pass"
    shown = measured_text(verdict)
    assert "0.94" in shown and "[" in shown
    assert verdict_text(verdict).lower().startswith("pass")
