"""Training to quality: when a training stops, and how long it took to get there.

A verdict on a trained network that depends on a step budget measures the budget. So a training
workload evaluates its validation figure every ``eval_every`` steps and asks a
:class:`QualityTracker` whether to go on. It stops

- at the first evaluation that reaches ``target``, where the rule says ``stop_at_target``
  (MLPerf Training's rule);
- or when ``patience`` evaluations in a row have not improved the best figure by more than
  ``delta`` (a plateau: trained as far as this rate and data take it), after ``lr_drops``
  earlier plateaus each of which divided the learning rate by 10 (the workload reads
  :attr:`QualityTracker.lr_scale`; PyTorch's ReduceLROnPlateau does the same);
- or at ``max_steps`` (the budget) without either: the figure is **not at quality**. The
  workload reports :data:`REACHED_QUALITY` = 0 for that repeat, and every claim declared
  ``at_quality`` on the case comes out ``inconclusive`` ("raise max_steps"), never ``fail``.

Time-to-quality is MLPerf's score: the wall time (evaluations included) and the steps from the
training's start to the first evaluation that reached ``target``, whether or not the training
stops there (a workload whose claims speak about the converged network trains on to the plateau).
Where the worker reads energy (:mod:`harness.protocol.energy`), the tracker also opens a zeus
window at the training's start and closes it there: ``joules_to_target``, rank 0's node.

The stop rule is a set of params (:func:`quality_params`), so a user can set the target, the
patience and the budget per run; each workload documents its values and their source.
"""
from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from harness.params import Param
from harness.protocol import energy

#: the per-repeat metric (1: stopped at the target or a plateau, 0: stopped by the budget)
REACHED_QUALITY = "reached_quality"
STOP_REASONS = ("target", "plateau", "budget")


def quality_params(*, target: float, stop_at_target: bool, delta: float, patience: int, lr_drops: int,
                   max_steps: int, eval_every: int, figure: str) -> dict[str, Param]:
    """The stop rule's params with a workload's defaults (``figure`` names the validation
    figure in the help: "validation Dice")."""
    return {
        "quality_target": Param(float, default=target, minimum=0.0,
                                help=f"the {figure} whose first reaching is the time-to-quality"),
        "stop_at_target": Param(bool, default=stop_at_target,
                                help="stop when the target is reached (else train on to a plateau)"),
        "plateau_delta": Param(float, default=delta, minimum=0.0,
                               help=f"an evaluation improves the best {figure} only by more than this"),
        "plateau_patience": Param(int, default=patience, minimum=1,
                                  help="stop after this many evaluations in a row without an improvement"),
        "plateau_lr_drops": Param(int, default=lr_drops, minimum=0,
                                  help="plateaus that divide the learning rate by 10 before the one that stops"),
        "max_steps": Param(int, default=max_steps, minimum=1,
                           help="the budget: a training stopped here before a plateau is not at quality "
                                "(its claims are inconclusive)"),
        "eval_every": Param(int, default=eval_every, minimum=1, help=f"steps between evaluations of the {figure}"),
    }


@dataclass(frozen=True)
class QualityRule:
    """When a training stops (see the module's docs); higher figures are better."""

    target: float
    stop_at_target: bool
    delta: float
    patience: int
    lr_drops: int
    max_steps: int
    eval_every: int

    @classmethod
    def from_params(cls, params: dict[str, Any]) -> QualityRule:
        """The rule from a case's params as :func:`quality_params` names them."""
        return cls(target=params["quality_target"], stop_at_target=params["stop_at_target"],
                   delta=params["plateau_delta"], patience=params["plateau_patience"],
                   lr_drops=params["plateau_lr_drops"],
                   max_steps=params["max_steps"], eval_every=params["eval_every"])

    def due(self, step: int) -> bool:
        """True after the ``step``-th update (1-based) when the figure is to be evaluated."""
        return step % self.eval_every == 0 or step == self.max_steps


@dataclass
class QualityTracker:
    """Follows one training's evaluations and says when to stop; ``summary()`` gives its
    per-repeat metrics. ``clock`` is the wall clock the time-to-quality is measured on, started at
    construction (MLPerf counts evaluation time in; so does this)."""

    rule: QualityRule
    clock: Callable[[], float] = time.perf_counter
    start: float = field(default=0.0)
    best: float | None = None
    best_step: int = 0
    since_best: int = 0
    top: float | None = None             # the highest figure seen (best counts only gains over delta)
    is_top: bool = False                 # the last evaluation is the highest so far: keep its weights
    drops_taken: int = 0                 # plateaus that divided the learning rate by 10
    stopped: str = ""                    # one of STOP_REASONS once decided
    target_step: int | None = None       # the first evaluation at or above the target
    target_s: float | None = None
    target_j: float | None = None        # joules from the start to the target, where energy is read
    curve: list[tuple[int, float, float]] = field(default_factory=list)   # (step, seconds, figure)
    _energy_key: str | None = None

    def __post_init__(self) -> None:
        meter = energy.active()
        if meter is not None:
            self._energy_key = f"quality-{id(self)}"
            meter.begin(self._energy_key)
        self.start = self.clock()

    def observe(self, step: int, value: float) -> bool:
        """Record the figure evaluated after ``step`` updates; True when the training is to stop."""
        seconds = self.clock() - self.start
        self.curve.append((step, seconds, float(value)))
        self.is_top = self.top is None or value > self.top
        if self.is_top:
            self.top = float(value)
        if self.best is None or value > self.best + self.rule.delta:
            self.best, self.best_step, self.since_best = float(value), step, 0
        else:
            self.since_best += 1
        if self.target_step is None and value >= self.rule.target:
            self.target_step, self.target_s = step, seconds
            self.target_j = self._close_energy(cancel=False)
        if self.rule.stop_at_target and self.target_step is not None:
            self.stopped = "target"
        elif self.since_best >= self.rule.patience and self.drops_taken < self.rule.lr_drops:
            self.drops_taken, self.since_best = self.drops_taken + 1, 0
        elif self.since_best >= self.rule.patience:
            self.stopped = "plateau"
        elif step >= self.rule.max_steps:
            self.stopped = "budget"
        return bool(self.stopped)

    def _close_energy(self, cancel: bool) -> float | None:
        meter, key = energy.active(), self._energy_key
        self._energy_key = None
        return meter.end(key, cancel=cancel) if meter is not None and key is not None else None

    @property
    def lr_scale(self) -> float:
        """The factor on the workload's learning rate now: 0.1 per plateau passed."""
        return 0.1 ** self.drops_taken

    @property
    def reached(self) -> bool:
        return self.stopped in ("target", "plateau")

    def summary(self, prefix: str = "") -> dict[str, Any]:
        """The repeat's metrics: ``reached_quality`` (1/0), why it stopped, the steps and seconds
        to the target (absent where it was never reached), the best figure, the steps run and
        the evaluations (``val_curve``, "step:figure" pairs)."""
        steps_run = self.curve[-1][0] if self.curve else 0
        out: dict[str, Any] = {
            f"{prefix}{REACHED_QUALITY}": 1.0 if self.reached else 0.0,
            f"{prefix}stop_reason": self.stopped or "budget",
            f"{prefix}steps_run": steps_run,
            f"{prefix}best_val": self.top,
            f"{prefix}best_val_step": max(self.curve, key=lambda c: c[2])[0] if self.curve else None,
            f"{prefix}lr_drops_taken": self.drops_taken,
            f"{prefix}val_curve": " ".join(f"{s}:{v:.4f}" for s, _, v in self.curve),
        }
        self._close_energy(cancel=True)   # a training that never reached its target
        if self.target_step is not None:
            out[f"{prefix}steps_to_target"] = self.target_step
            out[f"{prefix}seconds_to_target"] = self.target_s
            if self.target_j is not None:
                out[f"{prefix}joules_to_target"] = self.target_j
        return out
