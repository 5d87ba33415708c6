import pytest

from harness import Claim, Param, Workload
from harness.judging.claims import ClaimVerdict
from harness.judging.verdicts import rejudge
from harness.judging.intervals import Arm
from harness.errors import UsageError


class W(Workload):
    name = "w"
    params = {"n": Param(int, default=10, minimum=1), "mode": Param(str, default="a")}
    sizes = {"smoke": {"n": 2}, "small": {}, "paper": {"n": 1000}}

    def run(self, ctx):
        return {}


def test_resolve_params_layers_defaults_size_and_overrides() -> None:
    w = W()
    assert w.resolve_params("small", {}) == {"n": 10, "mode": "a"}
    assert w.resolve_params("smoke", {}) == {"n": 2, "mode": "a"}
    assert w.resolve_params("paper", {"n": 5}) == {"n": 5, "mode": "a"}
    with pytest.raises(UsageError, match="did you mean 'mode'"):
        w.resolve_params("small", {"mdoe": "b"})
    with pytest.raises(UsageError, match="no size 'huge'"):
        w.resolve_params("huge", {})


def test_claim_verdicts() -> None:
    """Pass and fail only when the whole interval says so; one replicate is inconclusive."""
    c = Claim("acc", ">=", 0.9, paper_value=0.95, source="Table 2")
    passed = c.evaluate({"acc": [0.93, 0.94, 0.935]})
    assert passed.status == "pass" and passed.interval[0] >= 0.9 and passed.replicates == 3
    assert passed.confidence == 0.95 and "t-interval over 3 repeats" in passed.interval_method
    failed = c.evaluate({"acc": [0.5, 0.52, 0.51]})
    assert failed.status == "fail" and failed.measured == pytest.approx(0.51) and failed.paper_value == 0.95
    assert failed.interval[1] < 0.9
    assert failed.passed is False and failed.to_json()["passed"] is False
    straddles = c.evaluate({"acc": [0.85, 0.95, 0.91]})
    assert straddles.status == "inconclusive" and straddles.passed is None
    single = c.evaluate({"acc": 0.99})     # one replicate of a figure that varies: never a pass
    assert single.status == "inconclusive" and single.interval is None and "one replicate" in single.reason
    exact = c.evaluate({"acc": Arm((0.93,), "exact")})
    assert exact.status == "pass" and exact.interval == [0.93, 0.93]
    missing = c.evaluate({})
    assert missing.status == "not_evaluated" and "not reported" in missing.reason
    assert c.evaluate({"acc": float("nan")}).status == "not_evaluated"
    assert c.evaluate({"acc": 10**400}).status == "not_evaluated"     # too large for a float
    limited = Claim("acc", ">=", 0.9, when={"mode": ("==", "a")})
    assert limited.evaluate({"acc": 1.0}, {"mode": "b"}).status == "not_applicable"
    relative = Claim("t", ">=", 2.0, relative_to={"mode": "a"}, transform="speedup")
    assert relative.evaluate({"t": 1.0}, {"mode": "a"}).status == "not_applicable"   # the baseline itself
    assert relative.evaluate({"t": 1.0}, {"mode": "b"}).status == "not_evaluated"    # no baseline ran
    fast = relative.evaluate({"t": [1.0, 1.01, 0.99]}, {"mode": "b"}, {"t": [3.0, 3.02, 2.98]})
    assert fast.status == "pass" and fast.measured == pytest.approx(3.0) and "Fieller" in fast.interval_method
    assert relative.evaluate({"t": [1.0, 1.01, 0.99]}, {"mode": "b"}, {"t": [1.5, 1.52, 1.49]}).status == "fail"
    with pytest.raises(ValueError):
        Claim("acc", "~", 1)


def test_paired_when_arms_share_seeds() -> None:
    """A difference over the same seeds pairs them (and says so); other ids: Welch, unpaired."""
    diff = Claim("acc", ">=", 0.0, relative_to={"mode": "a"}, transform="difference")
    a = Arm((0.91, 0.95, 0.88, 0.93), "seeds", ("0", "1", "2", "3"))
    b = Arm((0.90, 0.94, 0.87, 0.92), "seeds", ("0", "1", "2", "3"))
    paired = diff.evaluate({"acc": a}, {"mode": "b"}, {"acc": b})
    # every seed gains exactly 0.01: a zero-width interval, which 4 seeds may not decide (MIN_EQUAL_N)
    assert paired.paired is True and paired.interval == [pytest.approx(0.01)] * 2
    assert paired.status == "inconclusive" and "min_equal_n" in paired.reason
    declared = Claim("acc", ">=", 0.0, relative_to={"mode": "a"}, transform="difference", min_equal_n=4)
    assert declared.evaluate({"acc": a}, {"mode": "b"}, {"acc": b}).status == "pass"
    other = Arm(b.values, "seeds", ("4", "5", "6", "7"))
    unpaired = diff.evaluate({"acc": a}, {"mode": "b"}, {"acc": other})
    assert unpaired.paired is False and unpaired.status == "inconclusive" and "Welch" in unpaired.interval_method


def test_rejudge_at_another_level_from_the_kept_replicates() -> None:
    c = Claim("acc", ">=", 0.9)
    v = c.evaluate({"acc": [0.93, 0.95, 0.92, 0.96, 0.94]})
    assert v.status == "pass" and v.evidence["values"] == [0.93, 0.95, 0.92, 0.96, 0.94]
    loose = rejudge(ClaimVerdict.from_json(v.to_json()), 0.5)
    strict = rejudge(v, 0.9999)
    assert loose.interval[0] > v.interval[0] > strict.interval[0] and loose.confidence == 0.5
    assert strict.status == "inconclusive"


def test_skip_reason_for_missing_package() -> None:
    class Needs(W):
        requires = ("no_such_package_abc",)
    assert "no_such_package_abc" in Needs().skip_reason({}, 1)
    assert W().skip_reason({}, 1) is None


def test_replicates_reported_per_seed_pair_two_cases_of_a_run(harness_cli, tmp_path) -> None:
    """A workload's per-seed values travel through the worker into the record; a difference
    between two cases over the same seeds is a paired interval, decided where the seeds' own
    spread (0.05) would leave an unpaired one inconclusive; one timed repeat needs no note."""
    from conftest import read_jsonl
    r = harness_cli("run", "--workload", "seeded", "--param", "offset=0,0.02", "--out", str(tmp_path / "a"))
    assert r.returncode == 0, r.stdout + r.stderr
    base, case = read_jsonl(tmp_path / "a" / "results.jsonl")
    assert set(case["replicates"]["acc"]) == {"0", "1", "2", "3"} and case["reason"] == ""
    (verdict,) = case["claims"]
    assert verdict["status"] == "pass" and verdict["paired"] is True and verdict["replicates"] == 4
    assert verdict["interval"][0] >= 0.005 and "paired" in verdict["interval_method"]
    assert "paired" in r.stdout and "0.02" in r.stdout
    # the same seeds reported with a NaN: stored as null, named, and the claim not judged on it
    r = harness_cli("run", "--workload", "seeded", "--param", "offset=0,0.02", "--param", "nan_seed=2",
                    "--out", str(tmp_path / "b"))
    assert r.returncode == 0, r.stdout + r.stderr
    rec = read_jsonl(tmp_path / "b" / "results.jsonl")[1]
    assert rec["replicates"]["acc"]["2"] is None and "non-finite" in rec["reason"]
    assert rec["claims"][0]["status"] == "not_evaluated"
