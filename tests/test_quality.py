"""Training to quality (harness.judging.quality) and claims judged only at quality (Claim at_quality)."""
from __future__ import annotations

import itertools
from types import SimpleNamespace

import pytest

from harness import Claim
from harness.judging.quality import QualityRule, QualityTracker


def rule(**kw) -> QualityRule:
    base = dict(target=0.9, stop_at_target=False, delta=0.01, patience=2, lr_drops=0, max_steps=100, eval_every=10)
    return QualityRule(**{**base, **kw})


def run(tracker: QualityTracker, figures: list[float]) -> list[int]:
    steps = []
    for i, value in enumerate(figures, 1):
        steps.append(i * tracker.rule.eval_every)
        if tracker.observe(i * tracker.rule.eval_every, value):
            break
    return steps


def ticking(seconds_per_call: float = 1.0):
    counter = itertools.count()
    return lambda: next(counter) * seconds_per_call


def test_a_plateau_stops_after_patience_evaluations_without_a_gain_over_delta() -> None:
    t = QualityTracker(rule(), clock=ticking())
    # 0.5 -> 0.7 improves; 0.705 and 0.709 are within delta of 0.7: the second of them stops
    assert run(t, [0.5, 0.7, 0.705, 0.709, 0.8]) == [10, 20, 30, 40]
    s = t.summary()
    assert s["stop_reason"] == "plateau" and s["reached_quality"] == 1.0 and s["steps_run"] == 40
    assert s["best_val"] == 0.709 and s["best_val_step"] == 40    # the highest figure, whose weights are kept
    assert "steps_to_target" not in s and "seconds_to_target" not in s   # 0.9 never reached


def test_the_budget_stops_a_training_that_still_improves_and_says_it_is_not_at_quality() -> None:
    t = QualityTracker(rule(max_steps=30), clock=ticking())
    assert run(t, [0.1, 0.2, 0.3, 0.4]) == [10, 20, 30]
    assert t.summary()["stop_reason"] == "budget" and t.summary()["reached_quality"] == 0.0


def test_time_to_target_is_the_first_evaluation_at_the_target_and_training_may_go_on() -> None:
    t = QualityTracker(rule(target=0.6), clock=ticking(0.5))   # the clock ticks once at start, once per evaluation
    assert run(t, [0.5, 0.65, 0.62, 0.68, 0.675]) == [10, 20, 30, 40, 50]
    s = t.summary()
    assert s["steps_to_target"] == 20 and s["seconds_to_target"] == pytest.approx(1.0)
    stop = QualityTracker(rule(target=0.6, stop_at_target=True), clock=ticking())
    assert run(stop, [0.5, 0.65, 0.7]) == [10, 20] and stop.summary()["stop_reason"] == "target"


def test_each_plateau_before_the_last_divides_the_rate_by_ten() -> None:
    t = QualityTracker(rule(lr_drops=2), clock=ticking())
    scales = []
    for i, value in enumerate([0.5] * 9, 1):
        stop = t.observe(10 * i, value)
        scales.append(t.lr_scale)
        if stop:
            break
    assert scales == pytest.approx([1, 1, 0.1, 0.1, 0.01, 0.01, 0.01])
    assert t.summary()["lr_drops_taken"] == 2 and t.stopped == "plateau"


def test_rule_reads_the_params_quality_params_declares() -> None:
    from harness.judging.quality import quality_params

    declared = quality_params(target=0.8, stop_at_target=False, delta=0.005, patience=4, lr_drops=2,
                              max_steps=3000, eval_every=25, figure="validation Dice")
    r = QualityRule.from_params({k: p.default for k, p in declared.items()})
    assert r == QualityRule(0.8, False, 0.005, 4, 2, 3000, 25)
    assert r.due(25) and r.due(3000) and not r.due(26)


CLAIM = Claim("dice", ">=", 0.5, at_quality=True)
RELATIVE = Claim("acc", ">=", 0.01, relative_to={"arm": "b"}, transform="difference", at_quality=True)


def test_a_claim_at_quality_is_decided_only_where_every_training_reached_it() -> None:
    at = CLAIM.evaluate({"dice": [0.8, 0.81, 0.79], "reached_quality": [1, 1, 1]})
    assert at.status == "pass" and at.not_at_quality is None
    cut = CLAIM.evaluate({"dice": [0.8, 0.81, 0.79], "reached_quality": [1, 0, 1]})
    assert cut.status == "inconclusive" and cut.interval is not None     # the figure stays for the reader
    assert "1 of 3 of the case's trainings stopped at max_steps" in cut.reason
    failing = CLAIM.evaluate({"dice": [0.1, 0.11, 0.09], "reached_quality": [0, 0, 0]})
    assert failing.status == "inconclusive"                               # not a fail either
    silent = CLAIM.evaluate({"dice": [0.8, 0.81, 0.79]})
    assert silent.status == "inconclusive" and "did not report reached_quality" in silent.reason
    plain = Claim("dice", ">=", 0.5).evaluate({"dice": [0.8, 0.81, 0.79], "reached_quality": [0, 0, 0]})
    assert plain.status == "pass"                                         # a claim not declared at_quality


def test_the_baseline_of_a_relative_claim_must_be_at_quality_too() -> None:
    case = {"acc": [0.9, 0.91, 0.92], "reached_quality": [1, 1, 1]}
    base = {"acc": [0.8, 0.81, 0.8], "reached_quality": [1, 1, 0]}
    v = RELATIVE.evaluate(case, {"arm": "a"}, base)
    assert v.status == "inconclusive" and "the baseline's trainings" in v.reason
    assert RELATIVE.evaluate(case, {"arm": "a"}, {**base, "reached_quality": [1, 1, 1]}).status == "pass"


def test_rejudging_keeps_a_figure_that_was_not_at_quality_undecided() -> None:
    from harness.judging.claims import ClaimVerdict
    from harness.judging.verdicts import rejudge

    cut = CLAIM.evaluate({"dice": [0.8, 0.81, 0.79], "reached_quality": [1, 0, 1]})
    again = rejudge(ClaimVerdict.from_json(cut.to_json()), 0.5)
    assert again.status == "inconclusive" and again.not_at_quality


def test_a_speed_claim_passes_only_where_the_faster_arm_trained_as_well() -> None:
    from harness import QualityGuard

    claim = Claim("images_per_s", ">=", 2.0, relative_to={"math": "eigen"}, transform="ratio",
                  guard=QualityGuard("test_accuracy", 0.02))
    fast = {"images_per_s": [30.0, 31.0, 29.0]}
    slow = {"images_per_s": [10.0, 10.5, 9.5], "test_accuracy": [0.80, 0.81, 0.79]}
    same = claim.evaluate({**fast, "test_accuracy": [0.79, 0.80, 0.80]}, {"math": "onednn"}, slow)
    assert same.status == "pass" and same.quality_guard["held"] is True
    worse = claim.evaluate({**fast, "test_accuracy": [0.70, 0.71, 0.69]}, {"math": "onednn"}, slow)
    assert worse.status == "inconclusive" and worse.reason.startswith("at lower quality than its baseline")
    assert worse.quality_guard["case"] == pytest.approx(0.70)
    unchecked = claim.evaluate(fast, {"math": "onednn"}, {"images_per_s": slow["images_per_s"]})
    assert unchecked.status == "pass" and unchecked.quality_guard["held"] is None
    assert "reported no test_accuracy" in unchecked.quality_guard["why"]
    with pytest.raises(TypeError):
        Claim("x", ">=", 1, guard=QualityGuard("y", 0.1))   # a guard belongs to a comparison


class _Windows:
    """A stub of zeus's monitor: every window that is not cancelled used 42 J on GPU 0."""

    gpu_indices, cpu_indices = [0], []

    def __init__(self) -> None:
        self.open: set[str] = set()

    def begin_window(self, key: str, sync_execution: bool = True) -> None:
        self.open.add(key)

    def end_window(self, key: str, sync_execution: bool = True, cancel: bool = False):
        self.open.remove(key)
        return SimpleNamespace(gpu_energy={0: 0.0 if cancel else 42.0}, cpu_energy=None, dram_energy=None)


def test_where_energy_is_read_a_training_records_the_joules_to_its_target() -> None:
    """A window of its own from the tracker's start to the first evaluation at the target (zeus
    windows overlap the phase windows); one that never gets there leaves no figure and no window."""
    from harness.protocol import energy

    monitor = _Windows()
    energy.activate(energy.EnergyMeter(monitor, "stub"))
    try:
        reached = QualityTracker(rule(target=0.9, stop_at_target=True))
        assert len(monitor.open) == 1
        reached.observe(10, 0.5)
        assert reached.observe(20, 0.95) and not monitor.open
        assert reached.summary()["joules_to_target"] == 42.0
        missed = QualityTracker(rule(target=0.9, max_steps=20))
        missed.observe(20, 0.5)
        out = missed.summary()
        assert "joules_to_target" not in out and "seconds_to_target" not in out and not monitor.open
    finally:
        energy.activate(None)
    assert "joules_to_target" not in QualityTracker(rule(target=0.1)).summary()   # no meter: no window
