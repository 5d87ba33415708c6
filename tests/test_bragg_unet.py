"""bragg_unet: the simulator, the integration, the U-Net, and training through the harness."""
import numpy as np
import pytest

from conftest import assert_mlperf_compliant, read_jsonl, assert_work_counted

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.torch

from harness_plugins.bragg_unet.integrate import integrate, relative_errors  # noqa: E402
from harness_plugins.bragg_unet.data import INSTRUMENTS, simulate  # noqa: E402
from harness_plugins.bragg_unet.model import build, dice_iou  # noqa: E402


def test_simulator_is_deterministic_and_masks_hold_the_fraction() -> None:
    a, b = simulate(4, 16, INSTRUMENTS["A"], 3), simulate(4, 16, INSTRUMENTS["A"], 3)
    np.testing.assert_array_equal(a["counts"], b["counts"])
    assert a["counts"].shape == (4, 16, 16, 16) and (a["counts"] >= 0).all()
    assert (a["counts"] == np.round(a["counts"])).all()  # Poisson counts
    assert 0 < a["mask"].mean() < 0.5
    assert INSTRUMENTS["A"].i_min <= a["intensity"].min() and a["intensity"].max() <= INSTRUMENTS["A"].i_max


def test_simulator_varies_position_shape_background_and_adds_satellites() -> None:
    """Centres spread over +-4 voxels, shapes differ, satellites appear and stay out of the mask."""
    d = simulate(200, 16, INSTRUMENTS["A"], 5)
    g = np.arange(16)
    centroids = np.array([[(m.sum(axis=tuple(j for j in range(3) if j != k)) * g).sum() / m.sum()
                           for k in range(3)] for m in d["mask"]])
    assert centroids.std(axis=0).min() > 1.5 and np.ptp(centroids, axis=0).min() > 5
    assert 0.15 < d["satellite"].mean() < 0.45
    sizes = d["mask"].sum(axis=(1, 2, 3))
    assert sizes.std() / sizes.mean() > 0.2          # anisotropic widths: masks of many sizes
    # the satellite's counts are outside the truth mask: more counts outside than the background
    quiet = ~d["satellite"]
    outside = [(c[~m].mean() - b) / b for c, m, b in zip(d["counts"], d["mask"], d["background"])]
    assert np.mean(np.array(outside)[d["satellite"]]) > np.mean(np.array(outside)[quiet])


def test_profile_fit_recovers_a_clean_gaussian() -> None:
    from harness_plugins.bragg_unet.controls import gaussian_fit_intensities

    g = np.arange(16, dtype=float)
    t, y, x = np.meshgrid(g - 6.3, g - 8.0, g - 9.1, indexing="ij")
    shape = np.exp(-0.5 * ((t / 1.5) ** 2 + (y / 1.2) ** 2 + (x / 1.8) ** 2))
    box = 5000 * shape / shape.sum() + 2.0 + 0.5 * x / 16
    estimate = gaussian_fit_intensities(box[None].astype(np.float32))[0]
    assert estimate == pytest.approx(5000, rel=0.02)


def test_integration_by_hand() -> None:
    counts = np.full((4, 4, 4), 2.0)
    counts[1, 1, 1] = 102.0  # 100 counts of peak on a background of 2 per voxel
    region = np.zeros((4, 4, 4), dtype=bool)
    region[1, 1, 1] = region[1, 1, 2] = True
    value, sigma = integrate(counts, region, ~region)
    assert value == pytest.approx(100.0)
    assert sigma == pytest.approx(np.sqrt(104.0 + 4 * 2.0 / 62))
    errs, _ = relative_errors(counts[None], region[None], np.array([100.0]), sphere=False)
    assert errs[0] == pytest.approx(0.0)


def test_unet_shapes_and_metrics() -> None:
    net = build(depth=2, base=4, seed=0)
    out = net(torch.zeros(2, 1, 16, 16, 16))
    assert out.shape == (2, 1, 16, 16, 16)
    truth = np.zeros((1, 4, 4, 4), dtype=bool)
    truth[0, :2] = True
    pred = np.zeros_like(truth)
    pred[0, :1] = True
    dice, iou = dice_iou(pred, truth)
    assert dice == pytest.approx(2 * 16 / (16 + 32)) and iou == pytest.approx(16 / 32)


@pytest.mark.mpi
def test_two_ranks_keep_identical_replicas(harness_cli, tmp_path) -> None:
    r = harness_cli("run", "--workload", "bragg_unet", "--size", "smoke", "--ranks", "2", "--out", str(tmp_path))
    assert r.returncode == 0, r.stdout + r.stderr
    rec = read_jsonl(tmp_path / "results.jsonl")[0]
    assert rec["metrics"]["replicas_identical"] is True
    # three trainings per repeat: on A, the transferred network on B, the from-scratch one on B
    steps = rec["metric_samples"]["steps_run"]   # each repeat's training on A stops at its own plateau
    assert len(steps) == rec["protocol"]["repeats"] and all(0 < s < rec["params"]["max_steps"] for s in steps)
    assert rec["metrics"]["reached_quality"] == 1.0
    # Per rank: one gradient Allreduce per step, and one for the BatchNorm statistics per training.
    per_repeat = [s + 2 * rec["params"]["finetune_steps"] + 3 for s in steps]
    assert rec["comm"]["ops"]["Allreduce"]["calls"] == 2 * sum(per_repeat)
    assert {"forward", "backward", "optimizer", "inference", "integration"} <= set(rec["phases"])
    assert_work_counted(rec, "forward", "backward")
    # the backward of a convolution network does about twice its forward's operations
    assert 1.5 < rec["phases"]["backward"]["flops_per_repeat"][0] / rec["phases"]["forward"]["flops_per_repeat"][0] < 2.5
    assert list(tmp_path.glob("artifacts/*/bragg_box.png"))
    assert len(assert_mlperf_compliant(tmp_path)) == rec["protocol"]["repeats"]   # one log per training on A


@pytest.mark.slow
def test_small_scores_every_comparator_and_judges_on_five_trainings(harness_cli, tmp_path) -> None:
    """At size small (stopping at the first plateau of patience 2, without lowering the rate, and
    96 test boxes instead of 128, to keep CI short) the U-Net's Dice clears the best mask that needs
    no learning from the box (the template on the smoothed maximum) by 5 points; every comparator,
    the profile fit and the from-scratch B network are scored, and the claims are judged on
    intervals over 5 trainings, each at a plateau."""
    r = harness_cli("run", "--workload", "bragg_unet", "--ranks", "1", "--param", "plateau_lr_drops=0",
                    "--param", "plateau_patience=2", "--param", "n_test=96", "--out", str(tmp_path), timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    rec = read_jsonl(tmp_path / "results.jsonl")[0]
    m = rec["metrics"]
    verdicts = {c["metric"]: c for c in rec["claims"]}
    assert verdicts["dice_margin"]["status"] == "pass", m
    assert m["dice_mean_mask"] < m["dice_template"] < m["dice"]   # +-4 voxel centres: the mean mask is poor
    # the margins are over the comparators chosen on validation boxes in setup, not on the test boxes
    dice_of = {"mean": m["dice_mean_mask"], "template": m["dice_template"]}
    assert m["dice_margin"] == pytest.approx(m["dice"] - dice_of[m["dice_comparator"]])
    assert 2.0 <= m["sphere_radius"] <= 7.0
    weak_errors = {k: m[f"{key}_rel_error_weak"] for k, key in
                   (("template", "template"), ("mean", "mean_mask"), ("profile_fit", "profile_fit"), ("sphere", "baseline"))}
    assert m["weak_error_margin"] == pytest.approx(weak_errors[m["weak_comparator"]] - m["unet_rel_error_weak"])
    # each training is scored on test boxes of its own: the comparators' figures vary over repeats
    assert len(set(rec["metric_samples"]["dice_template"])) == 5
    assert len(set(rec["metric_samples"]["profile_fit_rel_error_weak"])) == 5
    assert m["dice_transfer_gain"] == pytest.approx(m["dice_transfer_after"] - m["dice_transfer_scratch"])
    assert rec["metric_samples"]["reached_quality"] == [1.0] * 5 and m["stop_reason"] == "plateau"
    logs = sorted((tmp_path / m["mlperf_logs"]).glob("result_*.txt"))
    assert [p.name for p in logs] == [f"result_{i}.txt" for i in range(5)]
    for c in verdicts.values():   # every verdict is the one its interval over the 5 trainings gives
        lo, hi = c["interval"]
        assert c["replicates"] == 5 and lo <= c["measured"] <= hi
        if c["comparison"] in (">=", ">"):
            assert c["status"] == ("pass" if lo > c["threshold"] or (c["comparison"] == ">=" and lo >= c["threshold"])
                                   else "fail" if hi < c["threshold"] else "inconclusive")
    assert m["unet_rel_error_strong"] < m["baseline_rel_error_strong"]
    assert m["train_boxes_per_s"] > 0 and m["inference_boxes_per_s"] > 0


def test_comparators_fit_on_training_boxes() -> None:
    """The mean mask scores some overlap, the template (which follows the peak) more; the fitted
    sphere radius beats a too-small one on the boxes it was fitted to."""
    from harness_plugins.bragg_unet.controls import MaskControls, fit_sphere_radius, smoothed_peak

    train = simulate(64, 16, INSTRUMENTS["A"], 0)
    ctl = MaskControls(train["counts"], train["mask"])
    masks = ctl.masks(train["counts"][:8])
    assert masks["mean"].shape == masks["template"].shape == (8, 16, 16, 16)
    mean_dice = dice_iou(masks["mean"], train["mask"][:8])[0]
    assert 0.2 < mean_dice < dice_iou(masks["template"], train["mask"][:8])[0]   # the template follows the peak
    moved = np.roll(train["counts"][:1], 3, axis=1)
    peak, peak_moved = smoothed_peak(train["counts"][0]), smoothed_peak(moved[0])
    assert peak_moved[0] == min(peak[0] + 3, 15)
    radius = fit_sphere_radius(train["counts"], train["intensity"])
    err = lambda r: relative_errors(train["counts"], None, train["intensity"], True, radius=r)[0].mean()  # noqa: E731
    assert err(radius) <= err(2.0) and err(radius) <= err(7.0)


def test_comparators_are_chosen_on_validation_boxes_and_scored_on_others() -> None:
    """The margins' comparators come from validation boxes: every comparator scored there, the
    best by Dice and by weak-peak error picked, and the same comparators score other boxes differently."""
    from harness_plugins.bragg_unet.controls import (MaskControls, choose_comparators, comparator_scores,
                                                     fit_sphere_radius)

    train = simulate(48, 16, INSTRUMENTS["A"], 0)
    ctl, radius = MaskControls(train["counts"], train["mask"]), fit_sphere_radius(train["counts"], train["intensity"])
    frac = INSTRUMENTS["A"].mask_fraction
    dice, weak = comparator_scores(ctl, radius, simulate(24, 16, INSTRUMENTS["A"], 4), frac)
    assert set(dice) == {"mean", "template"} and set(weak) == {"mean", "template", "sphere", "profile_fit"}
    by_dice, by_weak = choose_comparators(dice, weak)
    assert dice[by_dice] == max(dice.values()) and weak[by_weak] == min(weak.values())
    other_dice, _ = comparator_scores(ctl, radius, simulate(24, 16, INSTRUMENTS["A"], [0, 1, 0]), frac)
    assert other_dice != dice


def test_backend_that_cannot_drive_torch_skips(harness_cli, tmp_path) -> None:
    r = harness_cli("run", "--workload", "bragg_unet", "--size", "smoke", "--backend", "openblas", "--out", str(tmp_path))
    assert r.returncode == 2 and "cannot drive torch" in r.stderr


@pytest.mark.torch
def test_verdicts_at_a_plateau_do_not_depend_on_the_budget(tmp_path) -> None:
    """A constructed plateau (a rate too small to move the validation Dice): the training stops at
    the same step under a budget of 12 or 40 steps, so its figures and verdicts are the same; under
    a budget that ends before the plateau, the record says so and the claims are inconclusive."""
    from harness import run_once
    from harness_plugins.bragg_unet import BraggUnet

    flat = {"lr": 1e-6, "plateau_delta": 0.05, "eval_every": 2, "plateau_patience": 2, "plateau_lr_drops": 1}
    short = run_once(BraggUnet(), "smoke", {**flat, "max_steps": 12}, artifact_dir=tmp_path / "a", mpi=False)
    long = run_once(BraggUnet(), "smoke", {**flat, "max_steps": 40}, artifact_dir=tmp_path / "b", mpi=False)
    for r in (short, long):
        assert r["stop_reason"] == "plateau" and r["reached_quality"] == 1.0
        assert r["steps_run"] == 10 and r["lr_drops_taken"] == 1   # 2 + 2 evaluations without a gain, then 1
    assert short["dice"] == long["dice"] and short["dice_margin"] == long["dice_margin"]
    claims = {c.metric: c for c in BraggUnet.claims}
    verdicts = [claims["dice_margin"].evaluate({"dice_margin": [r["dice_margin"]] * 5, "reached_quality": [1.0] * 5})
                for r in (short, long)]
    assert verdicts[0].status == verdicts[1].status != "inconclusive"
    cut = run_once(BraggUnet(), "smoke", {**flat, "max_steps": 6}, artifact_dir=tmp_path / "c", mpi=False)
    assert cut["stop_reason"] == "budget" and cut["reached_quality"] == 0.0 and cut["steps_run"] == 6
    verdict = claims["dice_margin"].evaluate({"dice_margin": [cut["dice_margin"]] * 5,
                                              "reached_quality": [cut["reached_quality"]] * 5})
    assert verdict.status == "inconclusive" and "max_steps" in verdict.reason
    assert "run_stop" in (tmp_path / "c" / "mlperf" / "result_0.txt").read_text()
    assert '"status": "aborted"' in (tmp_path / "c" / "mlperf" / "result_0.txt").read_text()
