"""``harness run``: plan the cases, run each in its own child process, append records."""
from __future__ import annotations

import argparse

from harness.commands.options import add_case_options, add_launcher_options, request_from_args
from harness.commands.running import run


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("run", help="run a suite or one workload",
                       description="Run every case of a suite (or one workload) and append one "
                                   "record per case to OUT/results.jsonl.")
    add_case_options(p)
    add_launcher_options(p)
    p.add_argument("--dry-run", action="store_true",
                   help="print each case and its exact launch command; run and write nothing")
    p.set_defaults(func=main)


def main(args: argparse.Namespace) -> int:
    return run(request_from_args(args).replace(dry_run=args.dry_run))
