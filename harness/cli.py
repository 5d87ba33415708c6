"""The ``harness`` command: one module per verb under ``harness.commands``."""
from __future__ import annotations

import argparse
import signal
import sys

from harness import __version__
from harness.commands import capture, compare, controls, export_asv, history, info, list_, report, run, show, submit
from harness.errors import Interrupted, UsageError, check_interrupted, raise_interrupted

VERBS = (run, submit, controls, capture, list_, info, show, report, compare, history, export_asv)


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # argparse's own errors: one line, exit 2
        raise UsageError(f"{message} (see `{self.prog} --help`)")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="harness", description=(
        "Benchmark HPML workloads under one timing and communication-profiling protocol, "
        "verify which compute library really ran, and record comparable results."))
    parser.add_argument("--version", action="version", version=f"hpml-harness {__version__}")
    sub = parser.add_subparsers(dest="verb", metavar="COMMAND", parser_class=_Parser)
    for verb in VERBS:
        verb.register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    if hasattr(signal, "SIGXFSZ"):   # a file size limit makes writes fail (EFBIG), not the process die
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:   # not where the shell ignores it
        signal.signal(signal.SIGINT, raise_interrupted)
    parser = build_parser()
    try:
        check_interrupted()     # a Ctrl-C during the imports that something swallowed
        args = parser.parse_args(argv)
        if not getattr(args, "func", None):
            parser.print_help()
            return 2
        code = int(args.func(args))
        check_interrupted()     # a signal whose exception some library swallowed still decides the exit
        return code
    except UsageError as exc:
        print(f"harness: error: {exc}", file=sys.stderr)
        return 2
    except Interrupted as stop:
        print(f"harness: interrupted by {stop.name}", file=sys.stderr)
        return 128 + stop.signum
    except KeyboardInterrupt:
        print("harness: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:     # `harness report ... | head`: the reader left; say nothing more
        import os
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141


if __name__ == "__main__":
    sys.exit(main())
