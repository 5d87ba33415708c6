"""``harness export-asv PATHS``: the records' history as asv result files, for ``asv publish``."""
from __future__ import annotations

import argparse
import json
import os
import pathlib
import shutil
import tempfile

from harness.commands.common import console, warn, warn_unreadable
from harness.errors import UsageError
from harness.export.asv import export
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
    for key, default in (("results_dir", "results"), ("repo", ".")):
        value = conf.get(key, default)
        if not isinstance(value, str) or not value or "\0" in value:
            raise UsageError(f"--config {path}: {key} must be a non-empty path string without NUL bytes, "
                             f"not {value!r}; fix it in the configuration")
    base = path.resolve().parent
    results = base / conf.get("results_dir", "results")
    repo = base / conf.get("repo", ".")
    if not (repo / ".git").exists():
        raise UsageError(f"--config {path}: its repo {repo} is not a git checkout; asv publish needs the commits")
    return results, repo


def staged_export(series: list, results_dir: pathlib.Path, repo: pathlib.Path):
    """``export`` into a staging folder beside ``results_dir``, then each file renamed into place:
    a full or read-only disk leaves ``results_dir`` as it was (asv writes its files in place)."""
    try:
        results_dir.mkdir(parents=True, exist_ok=True)
        staging = pathlib.Path(tempfile.mkdtemp(prefix=".harness-export-", dir=results_dir.parent))
    except OSError as exc:
        raise UsageError(f"asv results_dir {results_dir}: cannot write there ({exc.strerror}); "
                         "give a writable results_dir in the configuration") from None
    try:
        if (results_dir / "benchmarks.json").is_file():     # merged with asv's own entries
            shutil.copy2(results_dir / "benchmarks.json", staging / "benchmarks.json")
        done = export(series, staging, repo)
        for f in sorted(p for p in staging.rglob("*") if p.is_file()):
            target = results_dir / f.relative_to(staging)
            target.parent.mkdir(parents=True, exist_ok=True)
            os.replace(f, target)
    except OSError as exc:
        raise UsageError(f"asv results_dir {results_dir}: could not write the export ({exc.strerror}); "
                         "files already in place are whole; free space and rerun") from None
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    done.files = [results_dir / f.relative_to(staging) for f in done.files]
    return done


def main(args: argparse.Namespace) -> int:
    results_dir, repo = _config(pathlib.Path(args.config))
    records, problems = load_records(args.paths)
    warn_unreadable(problems)
    if not records:
        raise UsageError("no readable records in " + " ".join(args.paths))
    workloads = [w.strip() for w in args.workload.split(",") if w.strip()] if args.workload else None
    series = select(build_series(records), workloads, None)
    done = staged_export(series, results_dir, repo)
    for why, n in sorted(done.left_out.items()):
        warn(f"{n} record(s) left out: {why}")
    if not done.files:
        raise UsageError("no record could be placed in asv's history (see the warnings); nothing written")
    console.print(f"{len(done.files)} asv result file(s), {len(done.benchmarks)} benchmark(s) in {results_dir}; "
                  "now `asv publish` (and `asv preview`)", markup=False)
    return 0
