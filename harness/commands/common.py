"""Helpers shared by the verbs: the console, the registry with its problems, this machine."""
from __future__ import annotations

import argparse
import functools
from typing import Any

from rich.console import Console
from rich.segment import Segment
from rich.table import Table
from rich.text import Text

from harness.errors import UsageError
from harness.hardware.fingerprint import fingerprint
from harness.hardware.profiles import Profile, load_profiles, match_profile
from harness.registry import Problem, Registry, build_registry
from harness.output.safe_text import has_unsafe, visible
from harness.judging.intervals import DEFAULT_CONFIDENCE

import os
import sys


def _width(stream: Any) -> int | None:
    """A terminal's own width; piped output (CI logs, files) 160 columns instead of rich's 80,
    unless COLUMNS says otherwise (rich reads it when the width is left open)."""
    if stream.isatty() or os.environ.get("COLUMNS", "").strip().isdigit():
        return None
    return 160


class SafeConsole(Console):
    """A rich Console whose printed text passes :func:`visible` after layout: a record's escape
    sequence cannot reach the terminal, while rich's own styles and cursor controls (rendered here,
    not part of the text) still do."""

    def _render_buffer(self, buffer: Any) -> str:
        return super()._render_buffer(
            seg if seg.control or not has_unsafe(seg.text) else Segment(visible(seg.text), seg.style)
            for seg in buffer)


# SafeConsole: a record's escape sequences are shown, not obeyed.
# emoji=False: ":100:" in "25:50:100" is a sweep, not an emoji.
console = SafeConsole(highlight=False, emoji=False, width=_width(sys.stdout))
err_console = SafeConsole(stderr=True, highlight=False, emoji=False, width=_width(sys.stderr))
SHOWN_PROBLEMS = 5   # unreadable lines listed one by one; the rest are counted


def warn(message: str) -> None:
    """'warning: MESSAGE' on stderr; the message is text, never markup."""
    err_console.print(Text.assemble(("warning:", "yellow"), " ", message))


def warn_unreadable(problems: list[str]) -> None:
    """The first few unreadable-line problems one per line, then one line counting the rest."""
    for p in problems[:SHOWN_PROBLEMS]:
        warn(p)
    if len(problems) > SHOWN_PROBLEMS:
        warn(f"... and {len(problems) - SHOWN_PROBLEMS} more unreadable line(s), the last: {problems[-1]}")


@functools.lru_cache(maxsize=1)
def registry() -> Registry:
    return build_registry()


def profiles() -> tuple[dict[str, Profile], list[Problem]]:
    return load_profiles(registry().profile_dirs)


def with_measured_clock(fp: dict[str, Any]) -> dict[str, Any]:
    """The fingerprint with ``cpu.measured_clock``: the clock the usable cores run at
    (harness.hardware.clock), from which peaks are derived; not on an emulated machine."""
    from harness.hardware.clock import cached_clock
    from harness.hardware.identity import identity

    if (fp.get("emulation") or {}).get("emulated"):
        return fp
    cpu = fp.get("cpu") or {}
    clock = cached_clock(identity(fp)["key"], int(cpu.get("usable_cpus") or 1))
    return {**fp, "cpu": {**cpu, "measured_clock": clock}}


def machine() -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """This machine's fingerprint, the profile it matches, and that profile's data (or {})."""
    fp = with_measured_clock(fingerprint())
    found, _ = profiles()
    match = match_profile(fp, found)
    return fp, match, (found[match["name"]].data if match["name"] else {})


def table(title: str, *columns: str) -> Table:
    """A left-titled rich table whose columns fold long cells."""
    t = Table(title=title, title_justify="left")
    for col in columns:
        t.add_column(col, overflow="fold")
    return t


def warn_problems(problems: list[Problem]) -> None:
    if problems:
        warn(f"{len(problems)} plugin problem(s); `harness list` shows them:")
        for p in problems:
            err_console.print(Text(f"  {p.source}: {p.reason}"))


def confidence_level(text: str) -> float:
    """``--confidence``: a two-sided level, a fraction or per cent, from 0.5 up to (not including) 1."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number: give a level such as {DEFAULT_CONFIDENCE:g} or {DEFAULT_CONFIDENCE * 100:g}") from None
    if 1 < value < 100:
        value /= 100
    if not 0.5 <= value < 1:
        raise argparse.ArgumentTypeError(f"{text}: give a level between 0.5 and 1 (e.g. {DEFAULT_CONFIDENCE:g}, or {DEFAULT_CONFIDENCE * 100:g} for per cent)")
    return value


def add_correction_option(p: Any) -> None:
    """``--correction holm|bh|none``: the verdicts over the family of a run's claims, shown beside each."""
    from harness.judging.multiplicity import CORRECTIONS, DEFAULT_CORRECTION

    p.add_argument("--correction", choices=CORRECTIONS, default=DEFAULT_CORRECTION,
                   help="beside each verdict, the verdict after a correction over all claims of the run: holm "
                        "(default: family-wise, no claim of the run decided wrongly at 1 - the level), bh "
                        "(Benjamini-Hochberg, false discovery rate) or none")


def add_confidence_option(p: Any, default: float | None = DEFAULT_CONFIDENCE, extra: str = "") -> None:
    """``--confidence LEVEL``: the two-sided level of the claims' intervals."""
    p.add_argument("--confidence", type=confidence_level, default=default, metavar="LEVEL",
                   help="two-sided level of the claims' confidence intervals: a claim passes or fails only "
                        "when its whole interval says so, else it is inconclusive"
                        + (f" (default {default:g})" if default is not None else "") + extra)


class UsageParser(argparse.ArgumentParser):
    """argparse whose own errors are one line naming the help to read, exit status 2 (a UsageError)."""

    def error(self, message: str) -> None:
        raise UsageError(f"{message} (see `{self.prog} --help`)")


def current_claims() -> dict[str, tuple[str, list[Any], dict[str, Any]]]:
    """{workload: (the work version its code makes now, its claims, the defaults of its params
    added later)} of every registered workload: what harness.judging.current_claims applies to
    the records of that version (a record made before a param existed ran at its default)."""
    from harness.params import added_later_defaults
    from harness.work_identity import current_work_version

    reg = registry()
    return {name: (current_work_version(w), list(w.claims), added_later_defaults(w.params))
            for name, w in ((n, reg.workload(n)) for n in sorted(reg.workloads))}
