"""The report's "Runs and their time" (issue 57): how long each run took, from its records."""
from __future__ import annotations

import pandas as pd

from harness.report.run_times import run_rows


def _case(run: str, start: str, wall: float, timed: float, workload: str = "w", machine: str = "m") -> dict:
    return {"machine": machine, "run_id": run, "created": start, "duration_s": wall, "timed_s": timed,
            "workload": workload, "size": "small", "ranks": 1, "threads": 2}


def test_wall_time_spans_first_start_to_last_end_and_names_the_slowest_case() -> None:
    df = pd.DataFrame([_case("r1", "2026-01-01T00:00:00+00:00", 60.0, 30.0, "a"),
                       _case("r1", "2026-01-01T00:01:30+00:00", 90.0, 90.0, "b"),   # ends at 3:00
                       _case("r2", "2026-01-01T00:00:00+00:00", 10.0, 5.0),          # a run of one case: left out
                       _case("r3", "2026-01-02T00:00:00+00:00", 6.0, 3.0, machine="n"),
                       _case("r3", "2026-01-02T00:00:06+00:00", 6.0, 3.0, machine="n")])
    columns, rows = run_rows(df)
    assert [r[:2] for r in rows] == [["m", "r1"], ["n", "r3"]]
    m = dict(zip(columns, rows[0]))
    assert m["wall (min)"] == "3.0" and m["cases' time (min)"] == "2.5" and m["in timed repeats"] == "80%"
    assert m["slowest case (s)"] == "b small 1x2: 90"
    assert run_rows(df.iloc[0:0])[1] == []
