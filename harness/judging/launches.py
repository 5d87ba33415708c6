"""``--launches N``: a case's repeats from N separate worker launches.

Repeats inside one worker share its process: its library start-up choices (oneDNN's kernels,
OpenBLAS's thread pool), its memory placement, its place on the cores. Their spread misses the
launch-to-launch variation a person rerunning the case would see (tf_cnn's oneDNN/Eigen ratio was
2.10 [1.82, 2.48] in one launch and 1.65 [1.38, 1.92] as two launches). Here every launch is a
fresh worker running the case's ``repeats``; the samples join the record with the launch each
came from (``sample_launches``), and with ``protocol.launches`` > 1 the claims' intervals on
repeated figures are hierarchical (:func:`harness.judging.intervals.mean_spread`).
"""
from __future__ import annotations

import dataclasses
from collections.abc import Callable

from harness.judging.until_decided import merge_round
from harness.plan import Case
from harness.results.record import Record


def more_launches(record: Record, case: Case, execute: Callable[[Case], Record], unstable_cov: float,
                  progress: Callable[[str], None] = lambda _: None) -> None:
    """Launches 2..N of ``case`` merged into ``record`` (launch 1's); a launch that does not run
    ok ends the case with its status and reason, naming the launch."""
    for i in range(1, case.launches):
        if not record.ok:
            return
        progress(f"launch {i + 1} of {case.launches}")
        extra = execute(dataclasses.replace(case, first_repeat=case.first_repeat + i * case.repeats))
        if not extra.ok:
            record.status = extra.status
            record.reason = f"launch {i + 1} of {case.launches} did not run ok: {extra.reason}"
            return
        merge_round(record, extra, unstable_cov)
