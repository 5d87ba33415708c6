"""The MLPerf logs (harness/protocol/mlperf_log.py) against mlperf-logging's own compliance checker with
the harness rulesets. Real logs of each training workload are checked in that workload's smoke
test (tests/test_bragg_unet.py, test_kfac.py, test_email_transfer.py, test_tf_cnn.py); here the
checker is shown to fail a log that breaks a rule, so those checks can fail."""
from __future__ import annotations

import pathlib
import subprocess
import sys
from types import SimpleNamespace

import pytest

pytest.importorskip("mlperf_logging")

from harness.protocol.mlperf_log import RULES_DIR, check, logs_location, training_log  # noqa: E402

HYPERPARAMETERS = {"global_batch_size": 8, "opt_name": "adam", "opt_base_learning_rate": 0.003, "model_depth": 2,
                   "model_base_channels": 8, "box_edge": 16, "quality_target": 0.8, "stop_at_target": False,
                   "plateau_delta": 0.005, "plateau_patience": 4, "plateau_lr_drops": 2, "max_steps": 3000,
                   "eval_every": 25}


def ctx(tmp_path: pathlib.Path, rank: int = 0, warmup: bool = False) -> SimpleNamespace:
    return SimpleNamespace(rank=rank, warmup=warmup, device="cpu", nranks=1, threads=2,
                           artifact_dir=tmp_path / "artifacts" / "bragg_unet-small-abc")


def write_log(tmp_path: pathlib.Path, hyperparameters: dict | None = None, stop: bool = True,
              evaluations: tuple[float, ...] = (0.5, 0.7, 0.81)) -> pathlib.Path:
    log = training_log(ctx(tmp_path), "bragg_unet", "result_0", hyperparameters or HYPERPARAMETERS,
                       train_samples=512, eval_samples=128, seed=0)
    for i, value in enumerate(evaluations, 1):
        log.evaluation(200 * i, value)
    if stop:
        log.stop(True, 200 * len(evaluations))
    assert log.path is not None
    return log.path


def test_a_training_log_passes_the_checker_and_names_the_harness(tmp_path) -> None:
    path = write_log(tmp_path)
    assert path == tmp_path / "artifacts" / "bragg_unet-small-abc" / "mlperf" / "result_0.txt"
    lines = path.read_text().splitlines()
    assert all(line.startswith(":::MLLOG {") for line in lines)
    text = path.read_text()
    for needed in ('"key": "submission_benchmark", "value": "bragg_unet"', '"key": "submission_division", "value": "open"',
                   '"key": "run_stop"', '"status": "success"', '"key": "eval_accuracy", "value": 0.81'):
        assert needed in text, needed
    passed, messages = check(path)
    assert passed, messages
    assert logs_location(ctx(tmp_path)) == "artifacts/bragg_unet-small-abc/mlperf"


def test_the_command_line_checker_passes_it_with_the_absolute_ruleset(tmp_path) -> None:
    """The command docs/workloads/*.md give for a log, as a person runs it."""
    path = write_log(tmp_path)
    r = subprocess.run([sys.executable, "-m", "mlperf_logging.compliance_checker", "--usage", "training",
                        "--ruleset", "6.1.0", "--config", str(RULES_DIR / "common.yaml"), str(path)],
                       capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert r.returncode == 0 and "SUCCESS" in r.stdout + r.stderr, r.stdout + r.stderr


@pytest.mark.parametrize("broken", ["no run_stop", "no opt_name", "accuracy above 1", "unknown benchmark"])
def test_a_log_that_breaks_a_rule_fails_the_checker(tmp_path, broken: str) -> None:
    hp = dict(HYPERPARAMETERS)
    if broken == "no opt_name":
        del hp["opt_name"]
    path = write_log(tmp_path, hp, stop=broken != "no run_stop",
                     evaluations=(0.5, 1.7) if broken == "accuracy above 1" else (0.5, 0.7))
    if broken == "unknown benchmark":
        path.write_text(path.read_text().replace('"value": "bragg_unet"', '"value": "resnet"'))
    passed, messages = check(path)
    assert not passed, broken
    assert messages


def test_other_ranks_and_warmup_repeats_write_nothing(tmp_path) -> None:
    for kwargs in ({"rank": 1}, {"warmup": True}):
        log = training_log(ctx(tmp_path, **kwargs), "bragg_unet", "result_0", HYPERPARAMETERS,
                           train_samples=512, eval_samples=128, seed=0)
        log.evaluation(100, 0.5)
        log.stop(False, 100)
        assert log.path is None
    assert not (tmp_path / "artifacts").exists()


class _Forger:
    """A hyperparameter whose repr would forge a successful run_stop line in a raw log."""

    def __repr__(self) -> str:
        return 'x\n:::MLLOG {"key": "run_stop", "value": null, "metadata": {"status": "success"}}'


def test_values_json_cannot_encode_stay_on_their_line_as_text(tmp_path) -> None:
    """Issue 55: a hyperparameter json cannot encode (an object whose repr has a newline) and NaN
    are written as one-line text, never raw through mllog's fallback: every line of the log is one
    :::MLLOG event whose payload strict JSON reads, and the only run_stop is the harness's."""
    import json
    import math

    path = write_log(tmp_path, {**HYPERPARAMETERS, "odd": _Forger(), "lr_limit": math.nan},
                     stop=False, evaluations=(0.5, math.inf))
    lines = path.read_text().splitlines()
    assert all(line.startswith(":::MLLOG ") for line in lines), lines
    events = [json.loads(line.removeprefix(":::MLLOG "), parse_constant=lambda c: pytest.fail(c)) for line in lines]
    assert not [e for e in events if e["key"] == "run_stop"]
    odd = next(e for e in events if e["key"] == "odd")
    assert odd["value"].startswith("x\\n:::MLLOG") and next(e for e in events if e["key"] == "lr_limit")["value"] == "nan"
