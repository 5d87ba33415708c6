"""tf_cnn: the synthetic images, oneDNN on against off in one run, data-parallel TF training,
and the mkl backend refusing a case that switched oneDNN off."""
import statistics

import numpy as np
import pytest

from conftest import read_jsonl
from harness_plugins.tf_cnn.data import images

pytest.importorskip("tensorflow")


def test_train_and_test_images_share_templates_and_are_deterministic() -> None:
    x, y = images(64, 4, 16, seed=3, split=0)
    xt, yt = images(64, 4, 16, seed=3, split=1)
    assert x.shape == (64, 16, 16, 3) and x.dtype == np.float32 and y.dtype == np.int32
    np.testing.assert_array_equal(images(64, 4, 16, seed=3, split=0)[0], x)
    assert not np.array_equal(x, xt)
    # the class means of both splits are the same templates (up to the noise)
    for c in range(4):
        assert np.abs(x[y == c].mean(axis=0) - xt[yt == c].mean(axis=0)).mean() < 0.5


@pytest.mark.tf
@pytest.mark.slow
def test_onednn_against_eigen_in_one_run(harness_cli, tmp_path) -> None:
    r = harness_cli("run", "--workload", "tf_cnn", "--size", "smoke", "--param", "onednn=on,off",
                    "--repeats", "3", "--out", str(tmp_path))
    assert r.returncode == 0, r.stdout + r.stderr
    records = read_jsonl(tmp_path / "results.jsonl")
    # the baseline (off) runs first whatever the order of the sweep, so the claim is evaluated
    assert [rec["params"]["onednn"] for rec in records] == ["off", "on"]
    off, on = records
    assert off["metrics"]["onednn_active"] is False and on["metrics"]["onednn_active"] is True
    claim = on["claims"][0]
    mean = lambda rec: statistics.mean(rec["metric_samples"]["images_per_s"])  # noqa: E731  (claims judge means)
    assert claim["baseline_value"] == pytest.approx(mean(off))
    assert claim["measured"] == pytest.approx(mean(on) / mean(off))
    lo, hi = claim["interval"]
    assert lo <= claim["measured"] <= hi and claim["status"] == ("pass" if lo >= 2 else "fail" if hi < 2 else "inconclusive")
    assert off["claims"][0]["passed"] is None
    assert {"forward_backward", "inference"} <= set(on["phases"])   # one rank: one fused step function


@pytest.mark.tf
@pytest.mark.mpi
def test_two_ranks_average_gradients_through_the_profiled_comm(harness_cli, tmp_path) -> None:
    r = harness_cli("run", "--workload", "tf_cnn", "--size", "smoke", "--ranks", "2", "--repeats", "3",
                    "--out", str(tmp_path))
    assert r.returncode == 0, r.stdout + r.stderr
    rec = read_jsonl(tmp_path / "results.jsonl")[0]
    assert rec["metrics"]["replicas_identical"] is True
    steps = rec["params"]["steps"]
    assert rec["comm"]["ops"]["Allreduce"]["calls"] == 2 * 3 * steps  # one per step per rank
    per_call = rec["comm"]["ops"]["Allreduce"]["bytes"] / rec["comm"]["ops"]["Allreduce"]["calls"]
    assert per_call > 10_000  # the whole float32 gradient of the model in one message


@pytest.mark.tf
@pytest.mark.slow
def test_mkl_backend_fails_a_case_that_switched_onednn_off(harness_cli, tmp_path) -> None:
    r = harness_cli("run", "--workload", "tf_cnn", "--size", "smoke", "--backend", "mkl", "--param", "onednn=off",
                    "--repeats", "3", "--out", str(tmp_path))
    rec = read_jsonl(tmp_path / "results.jsonl")[0]
    if rec["status"] == "skipped":
        pytest.skip(rec["reason"])
    assert r.returncode == 1
    assert rec["status"] == "failed" and "oneDNN switched off" in rec["reason"]
    assert rec["backend"]["evidence"]["tensorflow"]["onednn_active"] is False


@pytest.mark.tf
@pytest.mark.slow
def test_benchmark_models_train_on_a_synthetic_imagenet_batch(harness_cli, tmp_path) -> None:
    """The tf_cnn_benchmarks path: AlexNet (tiny input for time) on one synthetic batch made on the
    device, a fixed per-rank batch; and the Keras ResNet-50 is the real one (25.6 M parameters)."""
    r = harness_cli("run", "--workload", "tf_cnn", "--param", "model=alexnet", "--param", "image_size=64",
                    "--param", "batch=2", "--param", "steps=2", "--repeats", "1", "--warmup", "0",
                    "--out", str(tmp_path))
    assert r.returncode == 0, r.stdout + r.stderr
    m = read_jsonl(tmp_path / "results.jsonl")[0]["metrics"]
    assert m["model"] == "alexnet" and m["image_size"] == 64 and m["global_batch"] == m["batch_per_rank"] == 2
    assert m["synthetic"] is True and "test_accuracy" not in m and m["images_per_s"] > 0
    import os
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    from harness_plugins.tf_cnn.model import NATIVE_SIZE, build
    net = build("resnet50", NATIVE_SIZE["resnet50"], 1000, 32, 0)
    assert net.count_params() == 25_636_712 and net.output_shape == (None, 1000)
