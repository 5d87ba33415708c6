"""harness/judging/baseline_rule.py: which case is a case's baseline, one rule for plan and judging."""
from __future__ import annotations

from harness.judging.baseline_rule import CaseKey, baseline_of, is_baseline, is_baseline_for


def _key(ranks: int = 2, threads: int = 1, **params) -> CaseKey:
    return CaseKey("w", "small", {"msf": 64, **params}, None, ranks, threads)


def test_a_param_baseline_differs_only_in_that_param() -> None:
    assert baseline_of(_key(), {"msf": 1}) == ({"msf": 1}, 2, 1)
    assert is_baseline_for(_key(msf=1), _key(), {"msf": 1})
    assert not is_baseline_for(_key(msf=1, seed=2), _key(seed=1), {"msf": 1})       # another param differs
    assert not is_baseline_for(CaseKey("w", "smoke", {"msf": 1}, None, 2, 1), _key(), {"msf": 1})


def test_a_rank_baseline_has_the_case_s_cores_or_its_threads_per_rank_as_the_claim_says() -> None:
    assert baseline_of(_key(ranks=2, threads=1), {"ranks": 1}) == ({"msf": 64}, 1, 2)           # equal cores
    assert baseline_of(_key(ranks=2, threads=1), {"ranks": 1}, "per_rank") == ({"msf": 64}, 1, 1)
    assert baseline_of(_key(ranks=3, threads=1), {"ranks": 2}) == ({"msf": 64}, 2, None)        # 3 cores do not split
    assert is_baseline_for(_key(ranks=1, threads=2), _key(), {"ranks": 1})
    assert not is_baseline_for(_key(ranks=1, threads=1), _key(), {"ranks": 1})
    assert is_baseline_for(_key(ranks=1, threads=1), _key(), {"ranks": 1}, "per_rank")


def test_the_baseline_is_the_case_whose_judged_params_match() -> None:
    assert is_baseline({"ranks": 1}, _key(ranks=1).judged_params)
    assert not is_baseline({"ranks": 1}, _key().judged_params) and not is_baseline(None, {})
    assert _key().judged_params == {"size": "small", "msf": 64, "ranks": 2, "threads": 1}
