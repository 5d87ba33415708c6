"""Progress of a running case, from the worker to the parent.

Rank 0 of the worker keeps a tiny JSON file in the case folder up to date (a daemon thread writes
it about once a second, so the workload's loop pays nothing): which repeat of how many, whether it
is a warmup, the phase open now, and an estimate of the time left from the repeats done so far.
The parent reads it while it waits for the case and shows it: a live status line on a terminal,
otherwise one heartbeat line every ``HARNESS_HEARTBEAT_S`` seconds (default 30), so a CI log or a
Slurm output file shows that a long case is alive and where it is.
"""
from __future__ import annotations

import json
import os
import pathlib
import threading
import time
from collections.abc import Callable
from typing import Any

from harness.envvars import positive_seconds

PROGRESS_NAME = "progress.json"
DEFAULT_HEARTBEAT_S = 30.0


def heartbeat_s() -> float:
    """Seconds between heartbeat lines off a terminal (``HARNESS_HEARTBEAT_S``, default 30)."""
    return positive_seconds("HARNESS_HEARTBEAT_S", DEFAULT_HEARTBEAT_S)


class ProgressWriter:
    """The worker's side: ``stage()`` at each step, the open phase read from the clock."""

    def __init__(self, path: pathlib.Path, phase_of: Callable[[], str | None], period_s: float = 1.0) -> None:
        self.path, self.phase_of, self.period_s = path, phase_of, period_s
        self.state: dict[str, Any] = {"stage": "setup"}
        self._repeat_t0: float | None = None
        self._durations: list[float] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="harness-progress", daemon=True)
        self._thread.start()

    def repeat(self, i: int, total: int, warmup: int) -> None:
        """Repeat ``i`` (0-based, warmups first) of ``total`` begins."""
        now = time.monotonic()
        if self._repeat_t0 is not None:
            self._durations.append(now - self._repeat_t0)
        self._repeat_t0 = now
        measured = i >= warmup
        left = total - i
        eta = sum(self._durations) / len(self._durations) * left if self._durations else None
        self.state = {"stage": "measure" if measured else "warmup",
                      "repeat": i - warmup + 1 if measured else i + 1,
                      "of": total - warmup if measured else warmup, "eta_s": eta}

    def stage(self, name: str) -> None:
        self.state = {"stage": name}

    def _write(self) -> None:
        try:
            phase = self.phase_of()
        except Exception:  # noqa: BLE001 - the clock's stack changes under us; skip one reading
            phase = None
        data = dict(self.state, phase=phase, at=time.time())
        tmp = self.path.with_suffix(".tmp")
        try:
            tmp.write_text(json.dumps(data))
            os.replace(tmp, self.path)
        except OSError:
            pass     # progress is a courtesy: a full disk must not fail the case

    def _loop(self) -> None:
        while not self._stop.wait(self.period_s):
            self._write()

    def close(self) -> None:
        self._stop.set()


def read_progress(folder: pathlib.Path) -> dict[str, Any]:
    """The worker's last progress report in ``folder`` ({} before the first or when unreadable)."""
    try:
        data = json.loads((folder / PROGRESS_NAME).read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def progress_text(data: dict[str, Any]) -> str:
    """'repeat 2/5, phase train, about 40 s left' from a progress report ('' when there is none)."""
    stage = data.get("stage")
    if not stage:
        return ""
    if stage in ("warmup", "measure"):
        text = f"{'warmup' if stage == 'warmup' else 'repeat'} {data.get('repeat')}/{data.get('of')}"
    else:
        text = str(stage)
    if data.get("phase"):
        text += f", phase {data['phase']}"
    eta = data.get("eta_s")
    if isinstance(eta, (int, float)):
        text += f", about {eta:.0f} s left"
    return text


class Heartbeat:
    """The parent's side, ticked about once a second while a case runs: ``show(text)`` gets a
    status text every tick on a terminal, or a line every ``period_s`` seconds otherwise."""

    def __init__(self, folder: pathlib.Path, show: Callable[[str], None], live: bool,
                 period_s: float | None = None) -> None:
        self.folder, self.show, self.live = folder, show, live
        self.period_s = heartbeat_s() if period_s is None else period_s
        self.t0 = time.monotonic()
        self._next = self.t0 + self.period_s

    def __call__(self) -> None:
        now = time.monotonic()
        if not self.live and now < self._next:
            return
        self._next = now + self.period_s
        where = progress_text(read_progress(self.folder)) or "starting"
        self.show(f"running {now - self.t0:.0f} s: {where}")
