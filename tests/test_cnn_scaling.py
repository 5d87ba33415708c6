"""cnn_scaling: layer tables against published counts, collective formulas by hand, the workload."""
import math
import statistics

import pytest

from conftest import read_jsonl, assert_work_counted
from harness_plugins.cnn_scaling.layers import NETWORKS, Layer, totals
from harness_plugins.cnn_scaling.model import (Network, Node, allreduce_time, best_allreduce, gemm_time,
                                               iteration, scaling)


@pytest.mark.parametrize("name, params_m, gmacs", [
    ("alexnet", 61.1, 0.714),      # torchvision AlexNet: 61.1 M parameters, 0.71 GMACs
    ("vgg16", 138.36, 15.47),      # Simonyan & Zisserman: 138 M; 15.5 GMACs
    ("resnet50", 25.56, 4.09),     # He et al. / torchvision v1.5: 25.6 M; ~4.1 G multiply-adds
    ("googlenet", 6.8, 1.5),       # Szegedy et al.: ~6.8 M parameters, ~1.5 G multiply-adds
])
def test_layer_tables_match_published_totals(name, params_m, gmacs) -> None:
    t = totals(NETWORKS[name]())
    assert t["params"] / 1e6 == pytest.approx(params_m, rel=0.05)
    assert t["forward_macs"] / 1e9 == pytest.approx(gmacs, rel=0.06)


def test_conv_as_gemm_shapes() -> None:
    conv = Layer("c", cin=3, cout=64, kh=7, kw=7, ho=112, wo=112)
    g = conv.gemms(batch=2)
    assert g["forward"] == (64, 2 * 112 * 112, 3 * 49)
    assert g["backward_data"] == (3 * 49, 2 * 112 * 112, 64)
    assert g["backward_weights"] == (64, 3 * 49, 2 * 112 * 112)
    assert conv.params == 64 * 3 * 49 + 64


def test_collective_formulas_by_hand() -> None:
    net = Network(alpha=1e-6, beta=1e-9, gamma=1e-10)
    n, p = 1e6, 8  # log2 8 = 3
    assert allreduce_time(n, p, net, "recursive_doubling") == pytest.approx(3 * (1e-6 + 1e-3 + 1e-4))
    assert allreduce_time(n, p, net, "rabenseifner") == pytest.approx(6e-6 + 2 * 7 / 8 * 1e-3 + 7 / 8 * 1e-4)
    assert allreduce_time(n, p, net, "ring") == pytest.approx(14e-6 + 2 * 7 / 8 * 1e-3 + 7 / 8 * 1e-4)
    assert allreduce_time(n, p, net, "binomial") == pytest.approx(6 * (1e-6 + 1e-3) + 3 * 1e-4)
    assert allreduce_time(n, 6, net, "recursive_doubling") == pytest.approx(3 * (1e-6 + 1e-3 + 1e-4))  # ceil
    assert allreduce_time(n, 1, net, "ring") == 0.0
    # Latency-bound small messages pick recursive doubling; bandwidth-bound large ones Rabenseifner/ring.
    assert best_allreduce(8, 64, net)[0] == "recursive_doubling"
    assert best_allreduce(1e8, 64, net)[0] in ("rabenseifner", "ring")


def test_roofline_gemm_and_scaling_shape() -> None:
    node = Node(peak_flops=1e12, bandwidth=1e11, bytes_per_elem=4)
    assert gemm_time(1000, 1000, 1000, node) == pytest.approx(2e9 / 1e12)            # compute bound
    assert gemm_time(1, 1, 1_000_000, node) == pytest.approx(4 * 2_000_001 / 1e11)   # memory bound
    net = Network(alpha=1e-6, beta=1 / 12.5e9)
    layers = NETWORKS["resnet50"]()
    curve = scaling(layers, 256, [1, 2, 16, 256], node, net)
    effs = [c["efficiency"] for c in curve]
    assert effs[0] == pytest.approx(1.0) and all(a >= b for a, b in zip(effs, effs[1:]))
    plain = iteration(layers, 256, 16, node, net)
    overlapped = iteration(layers, 256, 16, node, net, overlap=True)
    assert overlapped["iteration_s"] <= plain["iteration_s"]
    assert overlapped["iteration_s"] >= max(plain["compute_s"], plain["comm_s"]) - 1e-12


def test_model_mode_records_are_labelled_and_fast(harness_cli, tmp_path) -> None:
    r = harness_cli("run", "--workload", "cnn_scaling", "--ranks", "1", "--repeats", "3",
                    "--param", "profile=skylake-8160,thunderx2-cn9980,power9-cte,v100-sxm2", "--out", str(tmp_path))
    assert r.returncode == 0, r.stdout + r.stderr
    records = read_jsonl(tmp_path / "results.jsonl")
    assert len(records) == 4
    for rec in records:
        m = rec["metrics"]
        assert m["kind"] == "model" and rec["stats"]["median"] < 5.0
        assert len(m["resnet50_efficiency"]) == len(m["nodes"]) == 11
        # the abstract's own content, on the published CNNs' layer messages at 1024 nodes: small
        # messages take the latency-optimal Allreduce, large ones the bandwidth-optimal one
        layers = {a.split(": ")[0]: int(a.split(": ")[1]) for a in m["allreduce_layers_p1024"]}
        assert set(layers) == {"recursive_doubling", "rabenseifner"} and m["allreduce_algorithms_optimal"] == 2
        assert sum(layers.values()) == sum(1 for n in ("alexnet", "vgg16", "resnet50", "googlenet")
                                           for layer in NETWORKS[n]() if layer.params)
        verdicts = {c["metric"]: c for c in rec["claims"]}
        model = verdicts.pop("allreduce_algorithms_optimal")
        assert model["status"] == "pass" and model["interval_method"].startswith("exact")
        assert all(c["status"] == "not_applicable" and c["passed"] is None for c in verdicts.values())
    assert (tmp_path / "cnn_scaling_model.png").stat().st_size > 10_000
    # its ablation: a link without latency leaves one algorithm cheapest for every message
    r = harness_cli("run", "--workload", "cnn_scaling", "--ranks", "1", "--repeats", "1", "--param", "latency_us=1e-6",
                    "--out", str(tmp_path / "ablation"))
    rec = read_jsonl(tmp_path / "ablation" / "results.jsonl")[0]
    assert rec["metrics"]["allreduce_layers_p1024"] == [f"rabenseifner: {sum(layers.values())}"]
    assert [c["status"] for c in rec["claims"] if c["metric"] == "allreduce_algorithms_optimal"] == ["fail"]
    bad = harness_cli("run", "--workload", "cnn_scaling", "--param", "profile=skylake", "--out", str(tmp_path))
    assert bad.returncode == 2 and "did you mean 'skylake-8160'" in bad.stderr


@pytest.mark.slow
@pytest.mark.mpi
@pytest.mark.torch
def test_validate_two_ranks_records_predictions_and_residuals(harness_cli, tmp_path) -> None:
    pytest.importorskip("torch")
    r = harness_cli("run", "--workload", "cnn_scaling", "--size", "smoke", "--param", "mode=validate",
                    "--ranks", "2", "--repeats", "1", "--warmup", "0", "--out", str(tmp_path), timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    rec = read_jsonl(tmp_path / "results.jsonl")[0]
    m = rec["metrics"]
    assert m["kind"] == "validation"
    n = len(m["allreduce_bytes"])
    assert n >= 2 and len(m["allreduce_predicted_s"]) == len(m["allreduce_measured_s"]) == n
    for pred, meas, res in zip(m["allreduce_predicted_s"], m["allreduce_measured_s"], m["allreduce_residuals"]):
        assert res == pytest.approx((pred - meas) / meas)
    assert len(m["gemm_kernels"]) == 12 and len(m["gemm_residuals"]) == 12  # 4 layers x 3 GEMMs
    assert all(math.isfinite(x) for x in m["gemm_predicted_s"])
    assert rec["comm"]["ops"]["Allreduce"]["calls"] > n * 20
    assert_work_counted(rec, "training")
    # every claim evaluated, and none decided on one repeat: each is inconclusive and says why
    assert {c["metric"]: (c["status"], c["measured"] is not None) for c in rec["claims"]
            if c["metric"] != "allreduce_algorithms_optimal"} == {
        m: ("inconclusive", True) for m in ("gemm_residual_weighted", "allreduce_residual_max",
                                            "roofline_efficiency_error_max", "eff_gap_measured")}
    assert all("one repeat" in c["reason"] for c in rec["claims"] if c["status"] == "inconclusive")
    assert min(m["allreduce_bytes"]) > m["allreduce_fit_max_bytes"]      # validated by extrapolation only
    # the 1-rank baseline ran on rank 0 while rank 1 slept (it used next to no CPU), and an
    # efficiency above 1 names its measured cause
    assert m["baseline_launch"].startswith("1 rank x 1 thread(s)") and m["baseline_waiting_cpu_s"] < 0.5
    for b in ("small", "large"):
        assert m[f"one_rank_batch_ratio_{b}"] > 0
        assert (m[f"efficiency_{b}_above_1"] == "not above 1") == (m[f"efficiency_{b}_measured"] <= 1)
    assert m["efficiency_error_max"] == pytest.approx(max(
        abs(m[f"efficiency_{b}_model"] - m[f"efficiency_{b}_measured"]) for b in ("small", "large")))
    assert m["roofline_efficiency_error_max"] == pytest.approx(max(
        abs(m[f"efficiency_{b}_roofline_model"] - m[f"efficiency_{b}_measured"]) for b in ("small", "large")))
    # the node model's small-dimension lengths come from the calibration sweep; the residual is
    # weighted by each GEMM's share of the measured time
    assert all(0 < m[f"node_half_{d}"] < 2048 for d in "mnk")
    assert len(m["gemm_sweep_gflops_small_k"]) == 7
    shares = [t / sum(m["gemm_measured_s"]) for t in m["gemm_measured_s"]]
    assert m["gemm_residual_weighted"] == pytest.approx(sum(abs(r) * w for r, w in zip(m["gemm_residuals"], shares)))
    assert m["reduction_gbs_measured"] > 0
    assert m["pingpong_bytes"] == m["allreduce_sweep_bytes"] and len(m["pingpong_s"]) == len(m["pingpong_bytes"])
    small = [s for b, s in zip(m["pingpong_bytes"], m["pingpong_s"]) if b <= 64]
    assert m["link_alpha_us"] == pytest.approx(statistics.median(small) * 1e6) and m["link_beta_ns_per_byte"] > 0


def test_superlinear_efficiency_names_its_measured_cause() -> None:
    from harness_plugins.cnn_scaling.train import superlinear_cause

    assert superlinear_cause(0.9, 1.3, 2) == "not above 1"
    assert superlinear_cause(1.14, 1.22, 2).startswith("explained: one rank at the global batch takes 1.22x 2 steps")
    assert superlinear_cause(1.3, 1.1, 2).startswith("partly explained")
    assert superlinear_cause(1.1, 0.95, 2).startswith("unexplained")


def test_allreduce_fit_finds_the_protocol_break_and_extrapolates() -> None:
    """Times with a protocol switch at 64 KiB (eager: 5 us + 1 ns/B; rendezvous: 30 us + 0.25 ns/B):
    the piecewise fit recovers the break and predicts 1-4 MiB within 1 %; one straight line does not."""
    from harness_plugins.cnn_scaling.calibrate import fit_network, validate_allreduce

    def t(n):
        return 5e-6 + 1e-9 * n if n < 65536 else 30e-6 + 0.25e-9 * n
    points = [(2**i, t(2**i)) for i in range(3, 23)]
    fit, rows = validate_allreduce(points, 2)
    assert fit.break_bytes == 65536 and fit.high is not None
    assert [r["bytes"] for r in rows] == [2**21, 2**22]
    assert max(abs(r["residual"]) for r in rows) < 0.01
    straight = [(2**i, 5e-6 + 1e-9 * 2**i) for i in range(3, 21)]
    assert fit_network(straight, 2).high is None


def test_link_fit_takes_alpha_from_the_smallest_and_beta_from_the_largest_messages() -> None:
    """A link of 100 us and 1 Gbit/s (8 ns/B) behind a window that makes mid-size messages slower
    than the line: alpha and beta come back exact, and the mid sizes do not bend beta."""
    from harness_plugins.cnn_scaling.calibrate import fit_link

    def t(n):
        return 100e-6 + 8e-9 * n + (300e-6 if 4096 <= n < 2**20 else 0.0)
    alpha, beta = fit_link([(2**i, t(2**i)) for i in range(3, 23)])
    assert alpha == pytest.approx(100e-6 + 8e-9 * 24) and beta == pytest.approx(8e-9)   # median of 8..64 B
    # One slow small message does not move alpha (the median of four).
    noisy = [(2**i, t(2**i) + (500e-6 if i == 3 else 0.0)) for i in range(3, 23)]
    assert fit_link(noisy)[0] == pytest.approx(100e-6 + 8e-9 * 48)
    _, straight = fit_link([(2**i, 100e-6 + 8e-9 * 2**i) for i in (3, 4)])
    assert straight == pytest.approx(8e-9)
    # Only the largest quarter counts: a bump reaching into it bends beta.
    _, bent = fit_link([(2**i, t(2**i) + (300e-6 if i == 20 else 0.0)) for i in range(3, 23)])
    assert abs(bent / 8e-9 - 1) > 0.01


@pytest.mark.mpi
def test_allreduce_algorithm_benchmark_forces_each_mpich_algorithm(tmp_path) -> None:
    """benchmarks/allreduce_algorithms.py: one mpiexec per MPICH algorithm, a model fitted to all,
    the model's pick next to the measured fastest at every size (the figures are not judged here)."""
    import json
    import pathlib
    import subprocess
    import sys

    from harness.launch.mpi import find_mpiexec
    if find_mpiexec() is None:
        pytest.skip("no mpiexec in the venv")
    script = pathlib.Path(__file__).parents[1] / "benchmarks" / "allreduce_algorithms.py"
    out = tmp_path / "ar.json"
    r = subprocess.run([sys.executable, str(script), "--max-kib", "16", "--reps", "3", "--json", str(out)],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    data = json.loads(out.read_text())
    assert [row["bytes"] for row in data["rows"]] == [2**i for i in range(3, 15)]
    algorithms = {"recursive_doubling", "rabenseifner", "ring", "binomial"}
    for row in data["rows"]:
        assert set(row["measured_us"]) == set(row["model_us"]) == algorithms
        assert row["fastest"] == min(row["measured_us"], key=row["measured_us"].get)
        assert row["model_pick"] == min(row["model_us"], key=row["model_us"].get)
    assert "of 12 sizes" in r.stdout


def test_half_performance_lengths_are_recovered_and_slow_small_gemms() -> None:
    from harness_plugins.cnn_scaling.calibrate import fit_half_length
    from harness_plugins.cnn_scaling.model import Node, gemm_time

    dims = [4, 8, 16, 32, 64, 128, 256]
    assert fit_half_length(dims, [d / (d + 30.0) for d in dims]) == pytest.approx(30.0, rel=0.03)
    flat, shaped = Node(1e11, 1e11), Node(1e11, 1e11, half_dims=(20.0, 8.0, 30.0))
    assert gemm_time(1024, 1024, 1024, shaped) == pytest.approx(gemm_time(1024, 1024, 1024, flat), rel=0.06)
    # conv1's inner dimension 27: about half the square-GEMM rate
    assert gemm_time(32, 65536, 27, shaped) > 2.5 * gemm_time(32, 65536, 27, flat)
