"""Issue 53: the gallery's machines compare on the same work, claims are judged by the code that
reads them, and peaks come from the clock the cores run at."""
from __future__ import annotations

import dataclasses
import pathlib

from harness.judging.claims import Claim, ClaimVerdict
from harness.judging.current_claims import judged_now
from harness.hardware.clock import measure_clock
from harness.hardware.peaks import machine_peaks
from harness.report import tables
from harness.results.frame import load_frame

ROOT = pathlib.Path(__file__).resolve().parent.parent
GALLERY = ROOT / "gallery"
INTEL, ZEN4, H200 = "intel-xeon-amx-2c", "amd-epyc-zen4-2c", "nvidia-h200-xeon-icelake-16c"


def _report(*folders: str, platforms: list[str] | None = None) -> dict[str, tuple[list[str], list[list[str]], str]]:
    """The Markdown report's overview and machine sections of the gallery folders, by title."""
    df, _ = load_frame([GALLERY / f for f in folders], frozenset({"claims", "samples", "evidence"}))
    df.attrs["inputs"] = [str(GALLERY / f) for f in folders]
    df.attrs["platforms"] = platforms
    out = {title: (cols, rows, note) for title, cols, rows, note in tables.overview_sections(df)}
    out.update({title: (cols, rows, note) for title, cols, rows, note in tables.machine_sections(df)})
    return out


def test_the_default_reference_is_the_machine_sharing_most_and_every_pair_is_compared() -> None:
    sections = _report(H200, ZEN4, INTEL)        # the H200 capture first: it shares nothing
    title = next(t for t in sections if t.startswith("Speed-up per workload over"))
    cols, rows, note = sections[title]
    assert "H200" not in title and "sharing the most matched cases" in note
    assert "H200" in note and "shares no case" in note
    by_workload = {r[0]: r[1:] for r in rows}
    # bragg_unet and kfac: edits of their controls only since the Zen 4 capture, now the same work
    assert {"bragg_unet", "kfac", "roofline", "tf_cnn"} <= set(by_workload)
    assert "[" in by_workload["kfac"][cols.index(next(c for c in cols if "2 vCPU" in c and c != title)) - 1]
    assert "per seed: seconds_to_target" in " ".join(by_workload["kfac"])     # compared at quality, per seed
    pair_cols, pair_rows, _ = sections["Speed-up between every pair of machines"]
    assert len(pair_rows) == 3 and sum("x" in c for r in pair_rows for c in r[1:]) == 2


def test_portability_is_over_the_machines_that_ran_the_same_work() -> None:
    cols, rows, note = _report(ZEN4, INTEL, H200)["Performance portability"]
    assert "largest set of machines" in note
    for row in rows:
        assert "H200" not in row[1] and not row[2].startswith("0 "), row   # never 0 for a stale capture
    named = _report(ZEN4, INTEL, H200, platforms=["zen4", "16 CPUs"])
    assert all(r[2].startswith("0 (") for r in named["Performance portability"][1])   # named: nothing in common


def _verdict(threshold: float, evidence: bool = True) -> ClaimVerdict:
    claim = Claim("speed", ">=", threshold)
    v = claim._verdict("pass", "")
    return dataclasses.replace(v, measured=1.5, interval=[1.4, 1.6], confidence=0.95, replicates=3,
                               evidence={"values": [1.4, 1.5, 1.6], "source": "repeats"} if evidence else None)


def test_a_changed_threshold_judges_the_stored_replicates_again() -> None:
    (again,) = judged_now([_verdict(1.2)], [Claim("speed", ">=", 2.0)], {})
    assert again.status == "fail" and again.threshold == 2.0 and "it said pass" in again.reason
    (same,) = judged_now([_verdict(1.2)], [Claim("speed", ">=", 1.2, description="reworded")], {})
    assert same.status == "pass" and same.description == "reworded"
    (blind,) = judged_now([_verdict(1.2, evidence=False)], [Claim("speed", ">=", 2.0)], {})
    assert blind.status == "not_evaluated" and "not evaluable on this record" in blind.reason
    (new,) = judged_now([_verdict(1.2)], [Claim("accuracy", ">=", 0.9)], {})
    assert new.status == "not_evaluated" and "needs 'accuracy'" in new.reason
    (elsewhere,) = judged_now([_verdict(1.2)], [Claim("speed", ">=", 2.0, when={"msf": (">=", 64)})], {"msf": 1})
    assert elsewhere.status == "not_applicable"


def test_a_condition_on_a_param_added_later_keeps_the_earlier_verdicts() -> None:
    """A claim narrowed to an ablation switch's default (kfac's first claim gained
    ``epochs_factor == 1``) is the same claim on records made before the switch existed, and a
    claim about the switched-on case does not apply to them (they ran at its default)."""
    later = {"epochs_factor": 1.0}
    narrowed = Claim("speed", ">=", 1.2, when={"epochs_factor": ("==", 1.0)})
    (kept,) = judged_now([_verdict(1.2)], [narrowed], {}, later)
    assert kept.status == "pass"
    (orphaned,) = judged_now([_verdict(1.2)], [narrowed], {})      # without the defaults: a new claim
    assert orphaned.status == "not_evaluated"
    (switched,) = judged_now([_verdict(1.2)], [Claim("speed", ">=", 1.2, when={"epochs_factor": (">", 1.0)})], {}, later)
    assert switched.status == "not_applicable"


def test_the_measured_clock_is_a_plausible_core_clock_and_the_peak_uses_it() -> None:
    clock = measure_clock(1)
    assert 0.3 < clock["ghz"] < 7.0, clock                 # a real core clock, not a multiple of one
    cpu = {"microarch": {"name": "zen4"}, "usable_cpus": 2, "max_mhz": 2000.0}
    reported = machine_peaks({"cpu": cpu}, {}, {})
    measured = machine_peaks({"cpu": {**cpu, "measured_clock": {"ghz": 3.0}}}, {}, {})
    assert reported["fp64_gflops"] == 2 * 2.0 * 16 and reported["clock"] == "reported"
    assert measured["fp64_gflops"] == 2 * 3.0 * 16 and "measured; reported 2.00 GHz" in measured["how"]


def test_training_cases_are_compared_per_seed_where_both_machines_have_seeds() -> None:
    from types import SimpleNamespace

    from harness.report.machines import compared_seconds

    def row(by: str, seeds: list[float] | None, repeats: list[float]) -> SimpleNamespace:
        return SimpleNamespace(compare_by=by, compare_samples=seeds, samples=repeats)

    a, b, basis = compared_seconds(row("fine_tune_s", [30.0, 31.0, 29.0], [240.0]),
                                   row("fine_tune_s", [20.0, 21.0, 19.5], [160.0]))
    assert basis == "fine_tune_s" and list(a) == [30.0, 31.0, 29.0] and list(b) == [20.0, 21.0, 19.5]
    a, b, basis = compared_seconds(row("fine_tune_s", [30.0, 31.0], [240.0]), row("", None, [160.0]))
    assert basis == "" and list(a) == [240.0] and list(b) == [160.0]     # one side has no seeds: the repeats
