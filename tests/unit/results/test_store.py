"""harness/results/store.py in-process: whole lines appended, any line read back or named unreadable."""
from __future__ import annotations

import math

from conftest import make_record
from harness.results.store import append_record, cut_text, finite_json, parse_line, read_records


def test_records_round_trip_and_a_bad_line_costs_only_itself(tmp_path) -> None:
    path = tmp_path / "results.jsonl"
    first = make_record(metrics={"x": 1.5, "bad": math.nan})
    stored = append_record(path, first)
    assert stored["metrics"] == {"x": 1.5, "bad": None} and "metrics.bad" in stored["reason"]
    with path.open("a") as f:
        f.write("{not json\n")
    append_record(path, make_record(id="fedcba9876543210"))
    records, problems = read_records(path)
    assert [r.id for r in records] == ["0123456789abcdef", "fedcba9876543210"]
    assert len(problems) == 1 and "results.jsonl:2: not valid JSON" in problems[0]


def test_lines_that_are_no_record_say_why() -> None:
    assert parse_line("[1, 2]")[0] is None
    assert "nested deeper" in parse_line("[" * 5000 + "]" * 5000)[1]
    assert parse_line("{}")[1]


def test_values_json_cannot_hold_are_replaced_and_named() -> None:
    replaced: list[str] = []
    assert finite_json({"a": [1.0, math.inf], "b": {"c": -math.inf}}, "", replaced) == {"a": [1.0, None], "b": {"c": None}}
    assert replaced == ["a[1]", "b.c"]
    assert cut_text("abcdef", 3) == "abc ... [cut: 3 more characters]" and cut_text("ab", 3) == "ab"
