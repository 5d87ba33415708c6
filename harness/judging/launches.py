"""``--launches N``: a case's repeats from N separate worker launches.

Repeats inside one worker share its process: its library start-up choices (oneDNN's kernels,
OpenBLAS's thread pool), its memory placement, its place on the cores. Their spread misses the
launch-to-launch variation a person rerunning the case would see (tf_cnn's oneDNN/Eigen ratio was
2.10 [1.82, 2.48] in one launch and 1.65 [1.38, 1.92] as two launches). Here every launch is a
fresh worker running the case's ``repeats``; the samples join the record with the launch each
came from (``sample_launches``), and with ``protocol.launches`` > 1 the claims' intervals on
repeated figures are hierarchical (:func:`harness.judging.intervals.mean_spread`).

Cases joined by a relative claim (:func:`harness.plan.interleaving_groups`) run their launches
interleaved, A B A B ..., so the machine's drift over minutes falls on both arms of a timing
ratio alike; each record's ``protocol.launch_order`` lists the group's launches as they ran.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Callable

from harness.judging.until_decided import merge_round
from harness.plan import Case
from harness.results.record import Record


def interleaved_launches(group: list[Case], execute: Callable[[Case], Record], unstable_cov: float,
                         progress: Callable[[str], None] = lambda _: None) -> dict[str, Record]:
    """Every launch of every case of ``group`` (one launch count), launch 1 of each in the group's
    order, then launch 2 of each, ...: {case_id: its record}. A case whose launch does not run ok
    ends there with its status and reason, naming the launch; the others go on."""
    records: dict[str, Record] = {}
    order: list[str] = []
    launches = group[0].launches
    for i in range(launches):
        for case in group:
            first = records.get(case.case_id)
            if first is not None and not first.ok:
                continue
            progress(f"launch {i + 1} of {launches} of {case.label} (interleaved with {len(group) - 1} other case(s))")
            got = execute(dataclasses.replace(case, first_repeat=case.first_repeat + i * case.repeats))
            order.append(f"{case.case_id} #{i + 1}")
            if first is None:
                records[case.case_id] = got
            elif not got.ok:
                first.status = got.status
                first.reason = f"launch {i + 1} of {launches} did not run ok: {got.reason}"
            else:
                merge_round(first, got, unstable_cov)
    for record in records.values():
        record.protocol.launch_order = list(order)
    return records


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
