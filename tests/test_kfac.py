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
    # the baselines run first although listed otherwise, each after the baselines it is itself
    # judged against: SGD 256 after SGD 32, plain K-FAC (the smoothing claim's baseline) after SGD 256
    assert [key(rec) for rec in records] == [("sgd", 32, "none"), ("sgd", 256, "none"),
                                             ("kfac", 256, "none"), ("kfac", 256, "smoothout")]
    assert all(rec["status"] == "ok" for rec in records)
    by = {key(rec): rec for rec in records}
    acc = {k: rec["metrics"]["test_accuracy"] for k, rec in by.items()}
    large, plain, smooth = (by[("sgd", 256, "none")]["claims"][0], by[("kfac", 256, "none")]["claims"][1],
                            by[("kfac", 256, "smoothout")]["claims"][2])
    assert large["measured"] == pytest.approx(acc[("sgd", 256, "none")] - acc[("sgd", 32, "none")])
    assert plain["measured"] == pytest.approx(acc[("kfac", 256, "none")] - acc[("sgd", 256, "none")])
    assert smooth["measured"] == pytest.approx(acc[("kfac", 256, "smoothout")] - acc[("kfac", 256, "none")])
    # every difference is paired over the seeds both configurations share, and its verdict is the
    # one its interval gives
    for c in (large, plain, smooth):
        lo, hi = c["interval"]
        assert c["paired"] is True and c["replicates"] == c["baseline_replicates"] >= 2
        side = (hi <= c["threshold"], lo > c["threshold"]) if c["comparison"] == "<=" else \
               (lo >= c["threshold"], hi < c["threshold"])
        assert c["status"] == ("pass" if side[0] else "fail" if side[1] else "inconclusive")
    assert by[("sgd", 256, "none")]["metrics"]["steps"] == by[("sgd", 32, "none")]["metrics"]["steps"]  # matched
    for rec in records:
        m = rec["metrics"]
        assert 0.5 < m["test_accuracy"] <= 1.0  # digits are learnt even in 30 updates
        assert m["replicas_identical"] is True
        assert m["steps"] == rec["params"]["updates"] == 30
        calls = rec["comm"]["ops"]["Allreduce"]["calls"]
        # 2 ranks x 2 learning rates x seeds (3 at smoke: the replicates of the paired intervals) x steps
        assert calls == 2 * 2 * rec["params"]["seeds"] * m["steps"]


def test_batches_drop_no_row_and_the_true_fisher_uses_sampled_labels() -> None:
    """Global batches run through permutation after permutation (a batch that does not divide the
    rows drops none); the true Fisher's output-gradient factor differs from the empirical one."""
    import numpy as np

    from harness_plugins.kfac.kfac import KFAC
    from harness_plugins.kfac.train import batches

    stream = batches(10, 4, np.random.default_rng(0))
    drawn = np.concatenate([next(stream) for _ in range(5)])   # 20 indices = 2 permutations
    assert sorted(drawn.tolist()) == sorted(list(range(10)) * 2)

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 3))
    kfac = KFAC(model)
    x, y = torch.randn(64, 4), torch.randint(0, 3, (64,))
    logits = model(x)
    torch.nn.functional.cross_entropy(logits, y).backward(retain_graph=True)
    empirical = kfac.batch_factors()[1]
    sampled = torch.multinomial(torch.softmax(logits.detach(), 1), 1)[:, 0]
    torch.nn.functional.cross_entropy(logits, sampled).backward()
    true = kfac.batch_factors()[1]
    kfac.capture = False
    torch.nn.functional.cross_entropy(model(x), y).backward()
    assert torch.equal(kfac.batch_factors()[1], true)        # capture off: g kept from the sampled pass
    assert not torch.allclose(true, empirical)
