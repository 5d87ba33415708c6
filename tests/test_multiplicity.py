"""Verdicts over the family of a run's claims (harness.judging.multiplicity): Holm keeps the chance of
any false decision in a run near its level, Benjamini-Hochberg the share of false decisions."""
from __future__ import annotations

import numpy as np
import pytest

from harness import Claim
from harness.judging.multiplicity import NOT_CORRECTED, corrected_statuses, decision_p

RUNS = 80     # 120 before; 80 keeps the 3-sigma bounds meaningful at two thirds of the CI time
CLAIMS = 50
N = 5


def _null_run(rng: np.random.Generator) -> list:
    """50 claims whose true value sits on their threshold: every decision is a false one."""
    return [Claim("x", ">=", 0.0).evaluate({"x": list(rng.normal(0.0, 1.0, N))}) for _ in range(CLAIMS)]


def test_fifty_null_claims_decide_at_most_the_corrected_share() -> None:
    """The issue's check: uncorrected, about 5 % of null claims are decided, so nearly every run
    decides some; after Holm at most about 5 % of runs decide any (seeded, 80 runs of 50 claims)."""
    rng = np.random.default_rng(3)
    runs_with_a_decision = {"none": 0, "holm": 0, "bh": 0}
    decided_share = []
    for _ in range(RUNS):
        verdicts = _null_run(rng)
        decided_share.append(np.mean([v.status in ("pass", "fail") for v in verdicts]))
        runs_with_a_decision["none"] += any(v.status in ("pass", "fail") for v in verdicts)
        for method in ("holm", "bh"):
            after = corrected_statuses(verdicts, method)
            runs_with_a_decision[method] += any(a in ("pass", "fail") for a in after)
    assert 0.03 <= np.mean(decided_share) <= 0.07                 # each claim at its own 95 %
    assert runs_with_a_decision["none"] / RUNS > 0.8              # so most runs decide something false
    assert runs_with_a_decision["holm"] / RUNS <= 0.05 + 3 * np.sqrt(0.05 * 0.95 / RUNS)
    assert runs_with_a_decision["bh"] / RUNS <= 0.05 + 3 * np.sqrt(0.05 * 0.95 / RUNS)   # all null: BH = FWER


def test_strong_claims_survive_and_p_values_follow_the_interval() -> None:
    rng = np.random.default_rng(4)
    strong = Claim("x", ">=", 0.0).evaluate({"x": list(rng.normal(5.0, 1.0, 10))})
    weak = Claim("x", ">=", 0.0).evaluate({"x": [0.2, 0.5, 1.0, 1.5, 1.8]})   # t = 3.35, 4 df: p = 0.029
    assert strong.status == "pass" and decision_p(strong) < 1e-4
    assert weak.status == "pass" and decision_p(weak) == pytest.approx(0.029, abs=0.002)
    after = corrected_statuses([strong, weak] + _null_run(rng)[:20], "holm")
    assert after[0] == "pass" and after[1] == "inconclusive"
    assert corrected_statuses([strong, weak], "none") == ["pass", "pass"]


def test_verdicts_without_replicates_are_marked_not_judged_again() -> None:
    from harness.judging.claims import ClaimVerdict

    old = ClaimVerdict(metric="x", comparison=">=", threshold=0.0, status="pass", measured=1.0)
    assert corrected_statuses([old], "holm") == [NOT_CORRECTED]
    with pytest.raises(ValueError, match="holm"):
        corrected_statuses([old], "bonferonni")


def test_a_zero_width_interval_gets_the_p_value_its_sample_can_support() -> None:
    """16 identical chains give a zero-width interval at every level: their p is the sign test's
    2 x 0.5^16, not 1e-12 (issue 54); an interval with a width, and a figure declared exact, keep
    the bisected p."""
    same = Claim("nmi", ">=", 0.9).evaluate({"nmi": [0.95] * 16})
    assert same.status == "pass" and same.interval[0] == same.interval[1]
    assert decision_p(same) == pytest.approx(2 * 0.5 ** 16)
    five = Claim("nmi", ">=", 0.9).evaluate({"nmi": [0.95] * 5})
    assert five.status == "pass" and decision_p(five) == pytest.approx(0.0625)
    # among 40 claims Holm needs p <= 0.05 / 40 for the first: 16 chains still decide, 5 cannot
    rng = np.random.default_rng(5)
    assert corrected_statuses([same, *_null_run(rng)[:39]], "holm")[0] == "pass"
    assert corrected_statuses([five, *_null_run(rng)[:39]], "holm")[0] == "inconclusive"
    spread = Claim("x", ">=", 0.0).evaluate({"x": list(rng.normal(5.0, 1.0, 10))})
    assert decision_p(spread) < 1e-4
