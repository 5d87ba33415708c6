"""``harness export-thicket RESULTS... --out DIR``: every ok record as a Caliper JSON-split
profile, for LLNL's Thicket and Hatchet (harness/export/thicket.py says what a profile holds)."""
from __future__ import annotations

import argparse

from harness.commands.common import console
from harness.commands.options import add_records_options, out_folder, selected_records
from harness.export.thicket import export


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("export-thicket", help="write every record as a Caliper JSON-split profile for Thicket",
                       description="Write one Caliper JSON-split profile per ok record of the given results "
                                   "files or folders: the case's phases as the call tree (profiled "
                                   "communication calls under the comm phase), seconds per repeat, calls and "
                                   "bytes as values, and the machine, workload, version, size, params, "
                                   "ranks, threads, backend, library, commit, run and date as metadata. Load "
                                   "them with thicket.Thicket.from_caliper(sorted(glob('DIR/*.json'))) "
                                   "(pip install 'hpml-harness[analysis]'); docs/analysis.md has examples.")
    add_records_options(p, "folder for the profiles (created; a profile of the same record is replaced)",
                        out_required=True)
    p.set_defaults(func=main)


def main(args: argparse.Namespace) -> int:
    out = out_folder(args.out)
    records = selected_records(args.results, args.workload)
    written = export(records, out)
    skipped = len(records) - len(written)
    console.print(f"wrote {len(written)} profile(s) of {len(records)} record(s) to {out}"
                  + (f" ({skipped} not ok or without samples: left out)" if skipped else ""), markup=False)
    return 0 if written else 1
