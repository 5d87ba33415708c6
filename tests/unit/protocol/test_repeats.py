"""harness/protocol/repeats.py in-process: the one repeat loop of the worker and run_once."""
from __future__ import annotations

import pathlib

from harness.protocol.context import RunContext
from harness.protocol.phases import PhaseClock
from harness.protocol.repeats import clean_metrics, measure_repeats


class _Counting:
    def run(self, ctx):
        with ctx.phase("work"):
            pass
        ctx.replicates("acc", {f"seed{ctx.repeat}": 0.5 + ctx.repeat})
        return {"repeat": ctx.repeat, "warm": ctx.warmup, "label": "x"}


class _Meter:
    def __init__(self) -> None:
        self.takes: list[bool] = []

    def charge(self, phase) -> None:
        pass

    def take(self, measured: bool) -> None:
        self.takes.append(measured)


def _ctx() -> RunContext:
    return RunContext(params={}, size="smoke", threads=1, artifact_dir=pathlib.Path("."), clock=PhaseClock())


def test_warmups_are_run_and_dropped_and_measured_repeats_keep_everything() -> None:
    meter = _Meter()
    done = measure_repeats(_Counting(), _ctx(), warmup=2, repeats=3, first_repeat=10, meter=meter)
    assert len(done.samples) == len(done.phases) == 3 and all("work" in p for p in done.phases)
    assert done.metric_samples["repeat"] == [10, 11, 12]      # a later round goes on counting
    assert "warm" not in done.metric_samples and "label" not in done.metric_samples   # numbers only
    assert done.metrics == {"repeat": 12, "warm": False, "label": "x"}
    assert done.replicates == {"acc": {"seed10": [10.5], "seed11": [11.5], "seed12": [12.5]}}
    # the meter drops what ran between repeats and keeps each measured repeat
    assert meter.takes == [False, False, False, False, False, True, False, True, False, True]
    assert done.cpu_s >= 0


def test_metrics_must_be_json_like() -> None:
    import numpy as np
    import pytest

    assert clean_metrics({"a": np.float64(1.5), "b": np.arange(2)}) == {"a": 1.5, "b": [0, 1]}
    with pytest.raises(TypeError, match="unsupported type dict"):
        clean_metrics({"a": {"nested": 1}})
