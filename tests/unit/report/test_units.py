"""harness/report/units.py: energy per item of work, as the report's tables and views print it."""
from harness.report.units import energy_text, joules_per_item, singular


def test_joules_per_item_is_power_over_rate() -> None:
    assert joules_per_item(800.0, 2.0, 1000.0, "boxes/s") == "0.4 J/box"
    assert energy_text(800.0, 2.0, 1000.0, "images/s") == "800 J (0.4 J/image)"
    assert energy_text(800.0, 2.0, None, "") == "800 J"
    assert energy_text(None, 2.0, 1000.0, "boxes/s") == "" and joules_per_item(float("nan"), 2.0, 1.0, "a/s") == ""
    assert [singular(w) for w in ("boxes", "samples", "class", "ms")] == ["box", "sample", "class", "ms"]
