"""``harness export-asv PATHS``: the records' history as asv result files, for ``asv publish``."""
from __future__ import annotations

import argparse
import json
import pathlib

from harness.commands.common import console, warn, warn_unreadable
from harness.errors import UsageError
from harness.history.asv_export import export
from harness.history.series import build_series, select
from harness.results.store import load_records


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("export-asv", help="write asv result files from existing records (then `asv publish`)",
                       description="Turn the records of the given results files or folders into asv "
                                   "results (one timing benchmark per workload and one track benchmark per "
                                   "claim, each with a 'case' parameter; one asv machine per harness "
                                   "machine, one result file per machine and commit), "
                                   "so that `asv publish` shows the history that was really run, with "
                                   "nothing rerun. Records are placed by their harness commit, which must "
                                   "be in the repository of the asv configuration.")
    p.add_argument("paths", nargs="+", metavar="PATH", help="results files, results folders or capture folders")
    p.add_argument("--config", default="asv.conf.json",
                   help="asv configuration whose results_dir and repo are used (default: ./asv.conf.json)")
    p.add_argument("--workload", help="only these workloads (names separated by commas)")
    p.set_defaults(func=main)


def _config(path: pathlib.Path) -> tuple[pathlib.Path, pathlib.Path]:
    """(results_dir, repo) of an asv configuration, relative paths taken from its folder."""
    if not path.is_file():
        raise UsageError(f"--config {path}: no such asv configuration (give the asv.conf.json of your project)")
    try:
        conf = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise UsageError(f"--config {path}: not readable JSON ({exc}); asv's own loader reads it too") from None
    if not isinstance(conf, dict):
        raise UsageError(f"--config {path}: not an asv configuration (a JSON object)")
    base = path.resolve().parent
    results = base / str(conf.get("results_dir", "results"))
    repo = base / str(conf.get("repo", "."))
    if not (repo / ".git").exists():
        raise UsageError(f"--config {path}: its repo {repo} is not a git checkout; asv publish needs the commits")
    return results, repo


def main(args: argparse.Namespace) -> int:
    results_dir, repo = _config(pathlib.Path(args.config))
    records, problems = load_records(args.paths)
    warn_unreadable(problems)
    if not records:
        raise UsageError("no readable records in " + " ".join(args.paths))
    workloads = [w.strip() for w in args.workload.split(",") if w.strip()] if args.workload else None
    series = select(build_series(records), workloads, None)
    done = export(series, results_dir, repo)
    for why, n in sorted(done.left_out.items()):
        warn(f"{n} record(s) left out: {why}")
    if not done.files:
        raise UsageError("no record could be placed in asv's history (see the warnings); nothing written")
    console.print(f"{len(done.files)} asv result file(s), {len(done.benchmarks)} benchmark(s) in {results_dir}; "
                  "now `asv publish` (and `asv preview`)", markup=False)
    return 0
