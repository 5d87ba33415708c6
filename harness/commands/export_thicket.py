"""``harness export-thicket RESULTS... --out DIR``: every ok record as a Caliper JSON-split
profile, for LLNL's Thicket and Hatchet (harness/export/thicket.py says what a profile holds)."""
from __future__ import annotations

import argparse
import pathlib

from harness.commands.common import console, warn_unreadable
from harness.errors import UsageError
from harness.export.thicket import export
from harness.results.store import load_records


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("export-thicket", help="write every record as a Caliper JSON-split profile for Thicket",
                       description="Write one Caliper JSON-split profile per ok record of the given results "
                                   "files or folders: the case's phases as the call tree (profiled "
                                   "communication calls under the comm phase), seconds per repeat, calls and "
                                   "bytes as values, and the machine, workload, version, size, params, "
                                   "ranks, threads, backend, library, commit, run and date as metadata. Load "
                                   "them with thicket.Thicket.from_caliper(sorted(glob('DIR/*.json'))) "
                                   "(pip install 'hpml-harness[analysis]'); docs/analysis.md has examples.")
    p.add_argument("results", nargs="+", metavar="RESULTS", help="results files, results folders or capture folders")
    p.add_argument("--out", required=True, metavar="DIR",
                   help="folder for the profiles (created; a profile of the same record is replaced)")
    p.add_argument("--workload", help="only these workloads (names separated by commas)")
    p.set_defaults(func=main)


def main(args: argparse.Namespace) -> int:
    out = pathlib.Path(args.out)
    if out.exists() and not out.is_dir():
        raise UsageError(f"--out {out}: is a file; give a folder for the profiles")
    if not out.parent.is_dir():
        raise UsageError(f"--out {out}: folder {out.parent} does not exist")
    records, problems = load_records(args.results)
    warn_unreadable(problems)
    if args.workload:
        wanted = {w.strip() for w in args.workload.split(",") if w.strip()}
        records = [r for r in records if r.workload.name in wanted]
    if not records:
        raise UsageError(f"no readable records in {', '.join(args.results)}"
                         + (f" of workload(s) {args.workload}" if args.workload else ""))
    written = export(records, out)
    skipped = len(records) - len(written)
    console.print(f"wrote {len(written)} profile(s) of {len(records)} record(s) to {out}"
                  + (f" ({skipped} not ok or without samples: left out)" if skipped else ""), markup=False)
    return 0 if written else 1
