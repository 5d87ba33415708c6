"""The ``harness`` command's entry point, outside the ``harness`` package on purpose.

Importing ``harness.cli`` and then the plugins takes a moment; a Ctrl-C in that time would
otherwise end in a KeyboardInterrupt traceback and death by signal. Here the handler is installed
first and the import is inside it, so an early Ctrl-C exits 130 with one line like a late one does,
even where a library's import swallows the exception (the handler also remembers the signal).
"""
from __future__ import annotations

import signal
import sys


def main() -> int:
    try:
        from harness.errors import raise_interrupted
        if signal.getsignal(signal.SIGINT) is signal.default_int_handler:   # not where the shell ignores it
            signal.signal(signal.SIGINT, raise_interrupted)
        from harness.cli import main as cli_main
        return cli_main()   # catches its own interrupts; this catches one in the instant before
    except KeyboardInterrupt:
        print("harness: interrupted", file=sys.stderr)
        return 130
