"""Which change-point method ``harness history`` uses, decided on seeded series with known steps.

    python benchmarks/change_points.py [--series 150] [--seed 1]

Each series is a run history as the harness records it: 8, 12 or 20 runs (and, for the CI case of a
new run against a short archive, 2, 3 or 4) of 5 timing samples,
log-normal noise within a run (2 or 5 %) and between runs (0.5 or 2 %), and no step (one series in
five) or one step of 1.1, 1.25, 1.5 or 2x at a random run. Methods (harness.history.steps):

* ``pelt+interval`` (what ``harness history`` does with one series): ruptures' PELT on the log
  run medians, each candidate kept only when its max-t interval (family-wise over the series'
  candidates) excludes 1 and the ratio reaches 5 %;
* ``asv+interval``: asv.step_detect's Potts fit, behind the same interval;
* ``pelt`` and ``asv``: the segmentations alone (any change of the fitted level is a step).

Per method and step size: the share of true steps found within one run of where they are
(recall), and false steps per series (on series with no step, and extra ones beside a true one).
Then the speed of the fit on a year of nightly runs (ruptures' Python PELT against the C
implementation `harness history` uses, which must find the same boundaries), and the gate:
commands that read 20 series without a step, and the share of them that confirm any
step, with each candidate judged at 95 % and at the family-wise level `harness history` uses.
Seeded: the same figures every time.
"""
from __future__ import annotations

import argparse
import math

import numpy as np

from harness.history.series import Point
from harness.history.steps import family_confidence, judge_boundaries, pelt_l2, segments

RATIOS = (1.1, 1.25, 1.5, 2.0)
METHODS = ("pelt+interval", "asv+interval", "pelt", "asv")


def seeded_series(rng: np.random.Generator, n_runs: int, ratio: float | None, within: float, between: float,
                  samples: int = 5) -> tuple[list[Point], int | None]:
    """A run history: (points, index of the first run after the step, or None)."""
    at = (int(rng.integers(2, n_runs - 1)) if n_runs >= 6 else int(rng.integers(1, n_runs))) if ratio else None
    points = []
    for i in range(n_runs):
        level = 0.01 * (ratio if at is not None and i >= at else 1.0) * math.exp(rng.normal(0, between))
        points.append(Point(run_id=f"r{i}", created=f"{i:04d}", records=[],
                            samples=list(level * np.exp(rng.normal(0, within, samples)))))
    return points, at


def confirmed(points: list[Point], segs: list[tuple[int, int]], use_interval: bool) -> list[int]:
    """The first run after each step of a segmentation (behind the interval, as `harness history`
    judges them when it reads this one series: family-wise over its candidates, if asked)."""
    bounds = [left for left, _ in segs[1:]]
    if not use_interval:
        return bounds
    steps, _ = judge_boundaries(points, bounds, confidence=family_confidence(0.95, len(bounds)))
    return [points.index(st.after[0]) for st in steps]


def evaluate(n_series: int, seed: int, lengths: tuple[int, ...] = (8, 12, 20)) -> dict[str, dict[float | None, tuple[float, float]]]:
    """method -> step ratio (None: no step) -> (recall, false steps per series), on series of
    ``lengths`` runs."""
    rng = np.random.default_rng(seed)
    tallies: dict[str, dict[float | None, list[int]]] = {m: {} for m in METHODS}
    for k in range(n_series):
        ratio = None if k % 5 == 0 else RATIOS[k % len(RATIOS)]
        points, at = seeded_series(rng, int(rng.choice(lengths)), ratio,
                                   within=float(rng.choice([0.02, 0.05])), between=float(rng.choice([0.005, 0.02])))
        segs = {"pelt": segments(points, "pelt"), "asv": segments(points, "asv")}
        for name in METHODS:
            found = confirmed(points, segs[name.split("+")[0]], name.endswith("+interval"))
            hit = at is not None and any(abs(f - at) <= 1 for f in found)
            t = tallies[name].setdefault(ratio, [0, 0, 0])
            t[0] += 1
            t[1] += hit
            t[2] += len(found) - hit
    return {name: {r: (t[1] / t[0], t[2] / t[0]) for r, t in sorted(by.items(), key=lambda kv: kv[0] or 0)}
            for name, by in tallies.items()}


def false_alarms(n_commands: int, seed: int, per_command: int = 20,
                 threshold: float = 0.0) -> tuple[float, float]:
    """The share of `harness history` commands over ``per_command`` seeded series without a step
    that confirm any step: (each candidate at 95 %, candidates at the family-wise level the command
    uses). Threshold 0 by default: the interval alone decides."""
    rng = np.random.default_rng(seed)
    nominal = family = 0
    for _ in range(n_commands):
        series = [seeded_series(rng, int(rng.choice((8, 12, 20))), None, within=float(rng.choice([0.02, 0.05])),
                                between=float(rng.choice([0.005, 0.02])))[0] for _ in range(per_command)]
        bounds = [[left for left, _ in segments(points)[1:]] for points in series]
        level = family_confidence(0.95, sum(map(len, bounds)))
        nominal += any(judge_boundaries(p, b, threshold, 0.95)[0] for p, b in zip(series, bounds))
        family += any(judge_boundaries(p, b, threshold, level)[0] for p, b in zip(series, bounds))
    return nominal / n_commands, family / n_commands


def pelt_timing(n_runs: int = 365, seed: int = 1) -> tuple[float, float, bool]:
    """Seconds of ruptures' Python PELT (l2 cost) and of the C fit `harness history` uses
    (KernelCPD, linear kernel) on one seeded series of ``n_runs`` log medians with a step, and
    whether they agree; a year of nightly runs by default."""
    import time

    import ruptures
    rng = np.random.default_rng(seed)
    y = rng.normal(0.0, 0.03, n_runs) + 0.2 * (np.arange(n_runs) >= n_runs // 2)
    penalty = 2 * 0.03 ** 2 * math.log(n_runs)
    t0 = time.perf_counter()
    slow = ruptures.Pelt(model="l2", min_size=1, jump=1).fit(y).predict(pen=penalty)
    t1 = time.perf_counter()
    fast = pelt_l2(y, penalty)
    t2 = time.perf_counter()
    return t1 - t0, t2 - t1, [int(e) for e in slow] == [int(e) for e in fast]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--series", type=int, default=150)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    for lengths in ((8, 12, 20), (2, 3, 4)):
        print(f"{args.series} seeded series of {', '.join(map(str, lengths))} runs (seed {args.seed}): "
              "recall / false steps per series, by step size")
        for name, by in evaluate(args.series, args.seed, lengths).items():
            cells = "  ".join(f"{'no step' if r is None else f'{r}x'}: {rec:.2f} / {false:.2f}"
                              for r, (rec, false) in by.items())
            print(f"{name:15s} {cells}")
    python_s, c_s, same = pelt_timing()
    print(f"PELT on 365 runs (a year of nightly runs): ruptures.Pelt(l2) {python_s * 1e3:.1f} ms, the C fit "
          f"harness history uses {c_s * 1e3:.2f} ms ({python_s / c_s:.0f}x), same boundaries: {same}")
    nominal, family = false_alarms(args.series // 2, args.seed)
    print(f"{args.series // 2} commands over 20 series without a step (seed {args.seed}, threshold 0): share that "
          f"confirm any step: each candidate at 95 % {nominal:.2f}, family-wise (what harness history does) {family:.2f}")


if __name__ == "__main__":
    main()
