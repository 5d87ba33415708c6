"""Errors the CLI turns into a one-line message and exit status 2."""
from __future__ import annotations

import difflib
import sys
from collections.abc import Iterable


class UsageError(Exception):
    """Bad input from the user: unknown names, malformed files, wrong values (exit status 2)."""


def did_you_mean(kind: str, name: str, known: Iterable[str]) -> UsageError:
    """Build an error for an unknown ``name`` of ``kind`` that suggests the closest known names."""
    known = sorted(known)
    close = difflib.get_close_matches(name, known, n=3, cutoff=0.5)
    hint = f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
    listing = f" (known: {', '.join(known)})" if known else " (none are registered)"
    return UsageError(f"unknown {kind} {name!r}{hint}{listing if not close else ''}")


class Interrupted(KeyboardInterrupt):
    """The run was stopped by a signal (SIGINT, SIGTERM or SIGHUP): exit status 128 + ``signum``."""

    def __init__(self, signum: int, from_signal: bool = False) -> None:
        super().__init__(signum)
        self.signum = signum
        self.from_signal = from_signal   # raised by a signal handler, not by plugin code

    @property
    def name(self) -> str:
        import signal

        return signal.Signals(self.signum).name


_pending_signal: int | None = None


def raise_interrupted(signum: int, frame: object) -> None:
    """A signal handler: SIGINT, SIGTERM and SIGHUP end the command, marked as a real signal (a
    KeyboardInterrupt that plugin code raises is that plugin's problem, not Ctrl-C).

    The signal is also remembered: a handler's exception surfaces wherever the interpreter happens
    to be, and a library's bare ``except:`` around an optional import (or a ``__del__``) swallows
    it. :func:`check_interrupted` at the command's checkpoints turns that lost signal back into the
    stop it was."""
    global _pending_signal
    _pending_signal = signum
    if sys.unraisablehook is not _quiet_lost_interrupt:
        sys.unraisablehook = _quiet_lost_interrupt
    raise Interrupted(signum, from_signal=True)


def _quiet_lost_interrupt(unraisable: "sys.UnraisableHookArgs") -> None:
    """Python reports an exception it cannot raise (one from a weakref callback, such as the import
    system's module-lock clean-up, or from a ``__del__``) as "Exception ignored in ..." with a
    traceback. Our signal's exception landing there is not an error: the signal is remembered and
    :func:`check_interrupted` ends the command with one line. Anything else is reported as usual."""
    exc = unraisable.exc_value
    if isinstance(exc, Interrupted) and exc.from_signal:
        return
    sys.__unraisablehook__(unraisable)


def check_interrupted() -> None:
    """Raise :class:`Interrupted` if a stopping signal arrived, even one whose exception was lost."""
    if _pending_signal is not None:
        raise Interrupted(_pending_signal, from_signal=True)
