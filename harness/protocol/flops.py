"""Counting a step's floating-point operations with the framework's own counter, for
``ctx.count_work`` (a phase placed on its machine's roofline, harness.hardware.placement).

Counting runs the step once more under the counter, outside the timed repeats: the workload counts
one representative step (or one per distinct shape) and multiplies by the steps it timed, so the
counter's own cost (torch's dispatch mode slows a step several-fold) never enters a measured second.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any


def torch_flops(step: Callable[[], Any]) -> int:
    """Floating-point operations of one call of ``step`` as ``torch.utils.flop_counter`` counts
    them: matrix products, convolutions and attention (forward and backward, where ``step``
    calls ``backward``); element-wise work, reductions and decompositions count 0, so the figure
    is a lower bound of the step's arithmetic, the part a GEMM ceiling speaks about."""
    from torch.utils.flop_counter import FlopCounterMode

    counter = FlopCounterMode(display=False)
    with counter:
        step()
    return int(counter.get_total_flops())
