"""The ``harness`` command: one module per verb under ``harness.commands``."""
from __future__ import annotations

import argparse
import signal
import sys

from harness import __version__
from harness.commands import (capture, check, compare, controls, export_asv, export_reframe, export_thicket, history,
                              info, list_, lock, model, report, run, show, submit)
from harness.commands.common import UsageParser
from harness.errors import Interrupted, UsageError, check_interrupted, raise_interrupted
from harness.output.safe_text import visible

VERBS = (run, submit, controls, check, capture, list_, info, show, report, compare, history, export_asv,
         export_reframe, export_thicket, model, lock)


def build_parser() -> argparse.ArgumentParser:
    parser = UsageParser(prog="harness", description=(
        "Benchmark HPML workloads under one timing and communication-profiling protocol, "
        "verify which compute library really ran, and record comparable results."))
    parser.add_argument("--version", action="version", version=f"hpml-harness {__version__}")
    sub = parser.add_subparsers(dest="verb", metavar="COMMAND", parser_class=UsageParser)
    for verb in VERBS:
        verb.register(sub)
    return parser


def printable_streams() -> None:
    """stdout and stderr write what their encoding cannot hold as backslash escapes (a lone
    surrogate, or "é" under PYTHONIOENCODING=ascii), never raise a UnicodeEncodeError mid-run."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.reconfigure(errors="backslashreplace")
        except (AttributeError, ValueError, OSError):
            pass    # not a text stream of io's (a test's capture): it handles its own encoding


def visible_warnings() -> None:
    """Python warnings (a library's, about a record's text) are printed through ``visible``."""
    import warnings

    def show(message, category, filename, lineno, file=None, line=None) -> None:  # noqa: ANN001
        text = visible(warnings.formatwarning(message, category, filename, lineno, line))
        try:
            (file or sys.stderr).write(text)
        except (OSError, ValueError):
            pass    # stderr gone: a warning is not worth a crash
    warnings.showwarning = show


def main(argv: list[str] | None = None) -> int:
    printable_streams()
    visible_warnings()
    if hasattr(signal, "SIGXFSZ"):   # a file size limit makes writes fail (EFBIG), not the process die
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:   # not where the shell ignores it
        signal.signal(signal.SIGINT, raise_interrupted)
    try:
        parser = build_parser()     # inside the try: a Ctrl-C while the verbs register is one line too
        check_interrupted()     # a Ctrl-C during the imports that something swallowed
        args = parser.parse_args(argv)
        if not getattr(args, "func", None):
            parser.print_help()
            return 2
        code = int(args.func(args))
        check_interrupted()     # a signal whose exception some library swallowed still decides the exit
        return code
    except UsageError as exc:
        print(f"harness: error: {visible(exc)}", file=sys.stderr)
        return 2
    except BrokenPipeError:     # `harness report ... | head`: the reader left; say nothing more
        import os
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
    except OSError as exc:      # a file-system fault no verb foresaw: one line naming the path
        print(f"harness: error: {visible(fs_error_text(exc))}", file=sys.stderr)
        return 2
    except Interrupted as stop:
        print(f"harness: interrupted by {stop.name}", file=sys.stderr)
        return 128 + stop.signum
    except KeyboardInterrupt:
        print("harness: interrupted", file=sys.stderr)
        return 130


def fs_error_text(exc: OSError) -> str:
    """'PATH: what went wrong (what to do)' for an OSError from the file system."""
    path = exc.filename if exc.filename is not None else "a file"
    also = f" -> {exc.filename2}" if exc.filename2 is not None else ""
    return (f"{path}{also}: {exc.strerror or exc}; check the path, its permissions and the free space, "
            "then rerun")


if __name__ == "__main__":
    sys.exit(main())
