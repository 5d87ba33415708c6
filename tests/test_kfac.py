"""kfac: the natural-gradient step against a direct computation, and the workload's sweep."""
import pytest

from conftest import read_jsonl

torch = pytest.importorskip("torch")


def test_kfac_preconditions_with_the_damped_kronecker_inverse() -> None:
    from harness_plugins.kfac.kfac import KFAC

    torch.manual_seed(0)
    layer = torch.nn.Linear(3, 2)
    model = torch.nn.Sequential(layer)
    kfac = KFAC(model, damping=1e-2, decay=0.5, inv_every=1, kl_clip=1e9)
    x = torch.randn(5, 3)
    target = torch.randn(5, 2)
    loss = ((model(x) - target) ** 2).mean()
    loss.backward()
    factors = kfac.batch_factors()
    a = torch.cat([x, torch.ones(5, 1)], 1)
    g = 2 * (model(x) - target).detach() / 10 * 5  # per-sample d loss / d output, of a mean over 5 x 2
    torch.testing.assert_close(factors[0], a.T @ a / 5)
    torch.testing.assert_close(factors[1], g.T @ g / 5)
    grad = torch.cat([layer.weight.grad, layer.bias.grad[:, None]], 1).clone()
    kfac.update(factors)
    kfac.precondition(lr=0.1)
    A, G = factors
    pi = torch.sqrt((torch.trace(A) / 4) / (torch.trace(G) / 2))
    expected = torch.linalg.inv(G + 0.1 / pi * torch.eye(2)) @ grad @ torch.linalg.inv(A + pi * 0.1 * torch.eye(4))
    torch.testing.assert_close(torch.cat([layer.weight.grad, layer.bias.grad[:, None]], 1), expected)


SUITE = """
[[case]]
workload = "kfac"
size = "smoke"
ranks = 2
[case.params]
optimizer = "kfac"
batch = 256
smoothing = ["smoothout", "none"]

[[case]]
workload = "kfac"
size = "smoke"
ranks = 2
[case.params]
optimizer = "sgd"
batch = [256, 32]
"""


@pytest.mark.slow
@pytest.mark.torch
@pytest.mark.mpi
def test_sweep_evaluates_the_claims_and_two_ranks_agree(harness_cli, tmp_path) -> None:
    suite = tmp_path / "kfac.toml"
    suite.write_text(SUITE)
    r = harness_cli("run", "--suite", str(suite), "--out", str(tmp_path / "res"), timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    records = read_jsonl(tmp_path / "res" / "results.jsonl")
    key = lambda rec: (rec["params"]["optimizer"], rec["params"]["batch"], rec["params"]["smoothing"])  # noqa: E731
    # every SGD case is a baseline of a relative claim, so they run first although listed last
    assert [key(rec) for rec in records] == [("sgd", 256, "none"), ("sgd", 32, "none"),
                                             ("kfac", 256, "smoothout"), ("kfac", 256, "none")]
    assert all(rec["status"] == "ok" for rec in records)
    by = {key(rec): rec for rec in records}
    smooth = by[("kfac", 256, "smoothout")]["claims"][0]
    assert smooth["passed"] is not None
    assert smooth["measured"] == pytest.approx(by[("kfac", 256, "smoothout")]["metrics"]["test_accuracy"]
                                               - by[("sgd", 32, "none")]["metrics"]["test_accuracy"])
    plain = by[("kfac", 256, "none")]["claims"][1]
    assert plain["baseline_value"] == by[("sgd", 256, "none")]["metrics"]["test_accuracy"]
    for rec in records:
        m = rec["metrics"]
        assert 0.5 < m["test_accuracy"] <= 1.0  # digits are learnt even in 3 epochs
        assert m["replicas_identical"] is True
        calls = rec["comm"]["ops"]["Allreduce"]["calls"]
        assert calls == 2 * 2 * m["steps"]  # 2 ranks x 2 learning rates x steps (1 seed at smoke)
