"""Claims get the inference their figure needs: proportions of 0/1 replicates with Wilson's
interval, bounded figures clipped to their bounds, all-equal replicates deciding only from a
declared minimum, and premises that turn a verdict into ``premise absent`` when they do not hold."""
from __future__ import annotations

import numpy as np
import pytest

from harness.judging.case import RunIndex
from harness.judging.claims import Claim, Premise
from harness.judging.verdicts import MIN_EQUAL_N
from harness.params import Param
from harness.plan import Case
from harness.results.record import WorkloadInfo
from harness.workload import Workload

from conftest import make_record


def test_wilson_interval_covers_the_true_share_at_about_the_stated_level() -> None:
    """200 seeded trials per true share: the 95 % interval covers it in 90-99 % of them, and
    never leaves [0, 1]."""
    claim = Claim("ok", ">=", 0.5, kind="proportion")
    rng = np.random.default_rng(42)
    for share, n in ((0.7, 20), (0.9, 30), (0.3, 12)):
        covered = 0
        for _ in range(200):
            v = claim.evaluate({"ok": [float(x) for x in rng.random(n) < share]})
            lo, hi = v.interval
            assert 0.0 <= lo <= hi <= 1.0 and "Wilson" in v.interval_method
            covered += lo <= share <= hi
        assert 0.90 <= covered / 200 <= 0.99, (share, n, covered)


def test_a_proportion_is_decided_by_its_share_and_refuses_other_values() -> None:
    claim = Claim("ok", ">=", 0.5, kind="proportion")
    assert claim.evaluate({"ok": [1, 1, 1]}).status == "inconclusive"        # 3 of 3: [0.44, 1]
    assert claim.evaluate({"ok": [1] * 5}).status == "pass"                  # 5 of 5: [0.57, 1]
    assert claim.evaluate({"ok": [0] * 5}).status == "fail"
    bad = claim.evaluate({"ok": [0, 2, 1]})
    assert bad.status == "not_evaluated" and "0 or 1" in bad.reason
    with pytest.raises(ValueError, match="proportion"):
        Claim("ok", ">=", 2.0, kind="proportion")
    with pytest.raises(ValueError, match="proportion"):
        Claim("ok", ">=", 0.5, kind="proportion", relative_to={"a": 1}, transform="difference")


@pytest.mark.parametrize("comparison,threshold", [(">=", 0.5), ("<=", 2.0), ("<", 0.0), (">", 1.0), ("==", 1.0)])
@pytest.mark.parametrize("value", [0.0, 1.0, 7.5])
def test_three_identical_replicates_never_decide_a_claim_whose_minimum_is_larger(comparison, threshold,
                                                                                  value) -> None:
    claim = Claim("x", comparison, threshold)
    assert claim.min_equal_n == MIN_EQUAL_N > 3
    v = claim.evaluate({"x": [value] * 3})
    assert v.status == "inconclusive" and v.interval == [value, value] and "min_equal_n" in v.reason
    # a relative claim whose arms are each constant: the same rule
    ratio = Claim("x", comparison, threshold, relative_to={"a": 0}, transform="ratio")
    if value:
        assert ratio.evaluate({"x": [value] * 3}, {}, {"x": [value] * 3}).status == "inconclusive"
    # five equal replicates may decide, and a declared minimum of 3 lets three do
    assert claim.evaluate({"x": [value] * 5}).status != "inconclusive" or comparison == "=="
    assert Claim("x", ">=", -1.0, min_equal_n=3).evaluate({"x": [value] * 3}).status == "pass"


def test_a_bounded_figure_keeps_its_interval_within_its_bounds() -> None:
    nmi = Claim("nmi", ">=", 0.9, kind="bounded", bounds=(0.0, 1.0))
    v = nmi.evaluate({"nmi": [0.99, 1.0, 0.97]})
    assert v.interval[1] == 1.0 and "clipped to [0, 1]" in v.interval_method and v.status == "pass"
    unbounded = Claim("nmi", ">=", 0.9).evaluate({"nmi": [0.99, 1.0, 0.97]})
    assert unbounded.interval[1] > 1.0 and unbounded.interval[0] == v.interval[0]
    with pytest.raises(ValueError, match="bounds"):
        Claim("nmi", ">=", 0.9, kind="bounded")


def test_dpmm_k_claims_are_proportions_of_chains() -> None:
    """|K - K*| of 0, 0, 1 gave a t-interval of [-1.1, 1.77]; as a share of chains it stays in [0, 1]."""
    from harness_plugins.dpmm import Dpmm

    claims = {c.metric: c for c in Dpmm.claims}
    assert "k_error" not in claims and "k_max" not in claims
    for metric in ("k_recovered", "k_stayed_1"):
        claim = claims[metric]
        assert claim.kind == "proportion"
        for chains in ([1, 1, 0], [0, 0, 0], [1] * 16, [1, 0] * 8):
            v = claim.evaluate({metric: chains}, {"application": "clustering", "k_true": 1, "data": ""})
            assert 0.0 <= v.interval[0] <= v.interval[1] <= 1.0
    assert claims["k_stayed_1"].evaluate({"k_stayed_1": [1] * 16}, {"k_true": 1}).status == "pass"
    assert claims["k_recovered"].evaluate({"k_recovered": [1, 1, 0]}, {}).status == "inconclusive"


# -- premises ---------------------------------------------------------------------------------------

LOSES = Claim("acc", "<=", -0.005, relative_to={"arm": "base"}, transform="difference",
              when={"arm": ("==", "plain")})
RECOVERS = Claim("acc", ">=", 0.005, relative_to={"arm": "plain"}, transform="difference",
                 when={"arm": ("==", "fix")}, premise=Premise(LOSES, {"arm": "plain"}, "only a loss can be recovered"))


class Arms(Workload):
    name = "arms"
    paper = "test fixture"
    params = {"arm": Param(str, default="base", choices=("base", "plain", "fix"))}
    variation = {"acc": "seeds"}
    claims = [LOSES, RECOVERS]


def _case(arm: str) -> Case:
    return Case(workload="arms", size="smoke", params={"arm": arm}, backend=None, ranks=1, threads=1, repeats=1,
                warmup=0, timeout=60.0, swept={"arm": arm})


def _record(arm: str, shift: float):
    per_seed = {str(s): 0.8 + 0.05 * np.sin(3 * s) + shift + 0.001 * ((s * 7) % 3) for s in range(8)}
    return make_record(workload=WorkloadInfo("arms", "t:arms"), params={"arm": arm}, replicates={"acc": per_seed},
                       metrics={"acc": float(np.mean(list(per_seed.values())))})


def _verdicts(plain_loss: float):
    index, out = RunIndex(), {}
    for arm, shift in (("base", 0.0), ("plain", -plain_loss), ("fix", 0.0)):
        rec = _record(arm, shift)
        out[arm] = index.verdicts(_case(arm), Arms(), rec)
        index.add(rec)
    return out


def test_a_claim_whose_premise_holds_is_judged_as_usual() -> None:
    fix = _verdicts(plain_loss=0.05)["fix"][1]
    assert fix.status == "pass" and fix.premise["case"] == {"arm": "plain"} and fix.premise_verdict is None


def test_a_claim_whose_premise_does_not_hold_is_premise_absent_not_fail() -> None:
    """plain loses nothing against base, so there is nothing for fix to recover: its own figure
    (no gain over plain) would be a fail; the verdict is premise absent, with the premise's figure."""
    verdicts = _verdicts(plain_loss=0.0)
    assert verdicts["plain"][0].status == "fail"
    fix = verdicts["fix"][1]
    assert fix.status == "premise_absent" and fix.premise_verdict["status"] == "fail"
    assert "came out fail" in fix.reason and "difference of acc vs arm=base" in fix.reason
    assert fix.interval is not None     # its own figure stays on the record


def test_a_premise_whose_case_did_not_run_leaves_the_claim_not_evaluated() -> None:
    class Absolute(Arms):
        claims = [Claim("acc", ">=", 0.1, when={"arm": ("==", "fix")},
                        premise=Premise(LOSES, {"arm": "plain"}, "only a loss can be recovered"))]

    index = RunIndex([_record("base", 0.0)])
    [fix] = index.verdicts(_case("fix"), Absolute(), _record("fix", 0.0))
    assert fix.status == "not_evaluated" and "premise" in fix.reason and "add arm=plain" in fix.reason


def test_the_kfac_smoothout_claim_rests_on_kfac_losing_to_sgd() -> None:
    from harness_plugins.kfac import KFAC_LOSES, Kfac

    smoothout = next(c for c in Kfac.claims if c.premise is not None)
    assert smoothout.premise.claim is KFAC_LOSES and smoothout.premise.case == {"smoothing": "none"}
