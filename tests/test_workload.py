import pytest

from harness import Claim, Param, Workload
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
    c = Claim("acc", ">=", 0.9, paper_value=0.95, source="Table 2")
    assert c.evaluate({"acc": 0.93}).status == "pass"
    failed = c.evaluate({"acc": 0.5})
    assert failed.status == "fail" and failed.measured == 0.5 and failed.paper_value == 0.95
    assert failed.passed is False and failed.to_json()["passed"] is False
    missing = c.evaluate({})
    assert missing.status == "not_evaluated" and "not reported" in missing.reason
    assert c.evaluate({"acc": float("nan")}).status == "not_evaluated"
    limited = Claim("acc", ">=", 0.9, when={"mode": ("==", "a")})
    assert limited.evaluate({"acc": 1.0}, {"mode": "b"}).status == "not_applicable"
    relative = Claim("t", ">=", 2.0, relative_to={"mode": "a"}, transform="speedup")
    assert relative.evaluate({"t": 1.0}, {"mode": "a"}).status == "not_applicable"   # the baseline itself
    assert relative.evaluate({"t": 1.0}, {"mode": "b"}).status == "not_evaluated"    # no baseline ran
    assert relative.evaluate({"t": 1.0}, {"mode": "b"}, {"t": 3.0}).status == "pass"
    assert relative.evaluate({"t": 1.0}, {"mode": "b"}, {"t": 1.5}).status == "fail"
    with pytest.raises(ValueError):
        Claim("acc", "~", 1)


def test_verdicts_carry_the_reported_standard_error() -> None:
    """<metric>_se goes onto the verdict; a difference combines both cases' errors; a ratio or a
    case without the figure gets none."""
    plain = Claim("acc", ">=", 0.9)
    assert plain.evaluate({"acc": 0.95, "acc_se": 0.01}).standard_error == 0.01
    assert plain.evaluate({"acc": 0.95}).standard_error is None
    diff = Claim("acc", ">=", 0.0, relative_to={"mode": "a"}, transform="difference")
    v = diff.evaluate({"acc": 0.95, "acc_se": 0.03}, {"mode": "b"}, {"acc": 0.9, "acc_se": 0.04})
    assert v.measured == pytest.approx(0.05) and v.standard_error == pytest.approx(0.05)
    assert diff.evaluate({"acc": 0.95, "acc_se": 0.03}, {"mode": "b"}, {"acc": 0.9}).standard_error is None
    ratio = Claim("acc", ">=", 1.0, relative_to={"mode": "a"}, transform="ratio")
    assert ratio.evaluate({"acc": 0.95, "acc_se": 0.03}, {"mode": "b"}, {"acc": 0.9, "acc_se": 0.04}).standard_error is None


def test_skip_reason_for_missing_package() -> None:
    class Needs(W):
        requires = ("no_such_package_abc",)
    assert "no_such_package_abc" in Needs().skip_reason({}, 1)
    assert W().skip_reason({}, 1) is None
