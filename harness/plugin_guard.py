"""One guard around plugin code that runs in the harness's own process (imports, hooks, the
objects plugins hand over): whatever it raises — ``SystemExit``, ``KeyboardInterrupt``,
``GeneratorExit``, any ``BaseException`` — is that plugin's problem, named, and never becomes the
harness's exit. A real signal still stops the command: the CLI's handlers raise
:class:`~harness.errors.Interrupted` marked ``from_signal``, which the guard lets through.

Plugin imports also get a deadline (``HARNESS_PLUGIN_IMPORT_TIMEOUT``, default 30 s) and their
printing is swallowed (a plugin that prints 50 MB at import must not flood ``harness list``).
"""
from __future__ import annotations

import contextlib
import io
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from typing import Any

from harness.errors import Interrupted
from harness.envvars import positive_seconds

DEFAULT_IMPORT_TIMEOUT_S = 30.0


class PluginTimeout(Exception):
    """A plugin's import ran past its deadline."""


def from_signal(exc: BaseException) -> bool:
    """True for the interruption a real signal raised (the CLI's handlers mark it)."""
    return isinstance(exc, Interrupted) and getattr(exc, "from_signal", False)


def describe(exc: BaseException, limit: int = 300) -> str:
    """``SystemExit(3)``-style one-line text of an exception, bounded and printable."""
    text = f"{type(exc).__name__}({str(exc)!r})" if str(exc) else type(exc).__name__
    text = text.encode("utf-8", "backslashreplace").decode("utf-8")
    return text if len(text) <= limit else text[:limit] + "..."


def guarded(fn: Callable[[], Any], quiet: bool = False) -> tuple[Any, BaseException | None]:
    """(fn()'s result, None), or (None, what it raised): any BaseException but a real signal's.
    ``quiet``: what fn prints is swallowed (imports)."""
    try:
        with _quiet() if quiet else contextlib.nullcontext():
            return fn(), None
    except BaseException as exc:  # noqa: BLE001 - the point: a plugin's exit is not the harness's
        if from_signal(exc):
            raise
        return None, exc


def import_deadline_s() -> float:
    return positive_seconds("HARNESS_PLUGIN_IMPORT_TIMEOUT", DEFAULT_IMPORT_TIMEOUT_S)


@contextlib.contextmanager
def deadline(seconds: float) -> Iterator[None]:
    """Raise PluginTimeout in this (main) thread after ``seconds``; elsewhere, no deadline."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def expire(signum: int, frame: object) -> None:
        raise PluginTimeout(f"still importing after {seconds:g} s (HARNESS_PLUGIN_IMPORT_TIMEOUT)")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


class _Sink(io.TextIOBase):
    """A stdout/stderr stand-in that drops what is written to it."""

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        return len(text)


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    out, err = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = _Sink(), _Sink()
    try:
        yield
    finally:
        sys.stdout, sys.stderr = out, err


def available(backend: Any) -> tuple[bool, str]:
    """A backend's ``available()``, whatever it raises or returns, as (ok, why)."""
    result, exc = guarded(backend.available)
    if exc is not None:
        return False, f"available() raised {describe(exc)} (a bug in the backend's plugin)"
    if not (isinstance(result, tuple) and len(result) == 2):
        return False, f"available() returned {result!r:.80}, not (ok, why) (a bug in the backend's plugin)"
    return bool(result[0]), str(result[1])
