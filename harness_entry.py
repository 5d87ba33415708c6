"""The ``harness`` command's entry point, outside the ``harness`` package on purpose.

Importing ``harness.cli`` loads numpy, pandas and the plugins (most of a second); a Ctrl-C in that
time would otherwise end in a KeyboardInterrupt traceback and death by signal. Here the import
itself is inside the handler, so an early Ctrl-C exits 130 with one line like a late one does.
"""
from __future__ import annotations

import sys


def main() -> int:
    try:
        from harness.cli import main as cli_main
    except KeyboardInterrupt:
        print("harness: interrupted", file=sys.stderr)
        return 130
    return cli_main()
