"""The options verbs share, and their parsing: the case selection and launch options (run, check,
submit), the machine name (run, capture), ``--reference`` (check, export-reframe), and the records
read and the folder written by export-thicket and model. One home, so no verb imports another."""
from __future__ import annotations

import argparse
import pathlib

from harness.check import Reference
from harness.commands.common import add_confidence_option, add_correction_option, warn_unreadable
from harness.errors import UsageError
from harness.judging.until_decided import DEFAULT_BUDGET_S, DEFAULT_MAX_REPEATS
from harness.launch.launcher import LAUNCHERS, Launcher
from harness.request import RunRequest
from harness.results.store import iter_records, results_files
from harness.workload import SIZES


def add_launcher_options(p: argparse.ArgumentParser) -> None:
    """--launcher and --nodes (shared with `harness check`, which runs cases as run does)."""
    p.add_argument("--launcher", choices=LAUNCHERS, default="mpiexec",
                   help="how cases start: mpiexec (default; one-rank cases run as a local process) "
                        "or srun (job steps of the current Slurm allocation)")
    p.add_argument("--nodes", type=int, help="nodes per case for --launcher srun (default: Slurm's choice)")


def add_case_options(p: argparse.ArgumentParser, required: bool = True) -> None:
    """The options that choose the cases and where records go (shared with `harness submit` and
    `harness check`, where the selection is optional)."""
    what = p.add_mutually_exclusive_group(required=required)
    what.add_argument("--suite", help="suite name (see `harness list suites`) or path to a suite TOML")
    what.add_argument("--workload", help="one workload name, or several separated by commas")
    p.add_argument("--backend", help="compute backend to request and verify, or several separated by "
                                     "commas (default: none requested, what runs is recorded)")
    p.add_argument("--size", choices=SIZES, help="named problem size (default: the suite's or workload's)")
    p.add_argument("--ranks", help="MPI ranks, e.g. 2 or 1,2,4 (default: the workload's)")
    p.add_argument("--threads", help="threads per rank, e.g. 2 or 1,2 (default: 1 under MPI, all CPUs otherwise)")
    p.add_argument("--param", action="append", default=[], metavar="NAME=V[,V2]",
                   help="set or sweep a workload parameter; repeatable")
    p.add_argument("--repeats", type=int, help="measured repeats per case (per launch with --launches; default 5)")
    p.add_argument("--launches", type=int,
                   help="separate worker launches per case, each running --repeats: timing intervals then carry "
                        "launch-to-launch variation (default: the workload's, 1 for most)")
    p.add_argument("--warmup", type=int, help="discarded warmup repeats per case (default 1)")
    p.add_argument("--timeout", type=float, help="seconds before a case is killed (default 900)")
    p.add_argument("--out", default="results", help="results folder (default: ./results)")
    add_machine_name_option(p)
    add_correction_option(p)
    p.add_argument("--resume", action="store_true",
                   help="skip cases already recorded as ok in OUT/results.jsonl")
    p.add_argument("--launcher-arg", action="append", default=[], metavar="ARG",
                   help="extra argument for srun, e.g. --launcher-arg=--mpi=pmi2; repeatable")
    p.add_argument("--oversubscribe", action="store_true",
                   help="run cases whose ranks x threads exceed this machine's usable CPUs (skipped "
                        "otherwise); they are marked in the record and their claims are not evaluated")
    p.add_argument("--junit", metavar="FILE",
                   help="also write the run as JUnit XML for CI: one test case per claim and case (fail: "
                        "failure; inconclusive or not applicable: skipped, with why) and per case that failed, "
                        "timed out or was skipped; written at the end, or when a signal stops the run")
    add_confidence_option(p)
    p.add_argument("--until-decided", action="store_true",
                   help="cases with inconclusive claims get more repeats, in rounds that double them, "
                        "until every claim is decided, --max-repeats is reached or --budget is spent "
                        "(every look is judged at a level corrected for the number of looks)")
    p.add_argument("--max-repeats", type=int, default=DEFAULT_MAX_REPEATS, metavar="N",
                   help=f"--until-decided: most measured repeats per case (default {DEFAULT_MAX_REPEATS})")
    p.add_argument("--budget", default=None, metavar="DURATION",
                   help=f"--until-decided: time for extra rounds over the whole run, e.g. 600, 90s, 10m, 1h "
                        f"(default {DEFAULT_BUDGET_S / 60:g}m)")


def add_machine_name_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--machine-name", metavar="NAME",
                   help="a name for this machine in records and reports (e.g. 'skx-node-12'); shown instead of "
                        "the label made from its facts, it does not change the machine's key")


def request_from_args(args: argparse.Namespace, launcher: Launcher | None = None) -> RunRequest:
    """The options of :func:`add_case_options` (and run's launcher options) as a checked request."""
    if launcher is None:
        launcher = Launcher(kind=args.launcher, nodes=args.nodes, extra_args=tuple(args.launcher_arg))
    return RunRequest(suite=args.suite, workload=args.workload, backend=args.backend, size=args.size,
                      ranks=args.ranks, threads=args.threads, param=tuple(args.param), repeats=args.repeats,
                      launches=args.launches, warmup=args.warmup, timeout=args.timeout,
                      out=args.out, machine_name=args.machine_name, correction=args.correction,
                      confidence=args.confidence, resume=args.resume, oversubscribe=args.oversubscribe,
                      junit=args.junit,
                      until_decided=args.until_decided, max_repeats=args.max_repeats, budget=args.budget,
                      launcher=launcher)


def load_reference(path: str) -> Reference:
    """``--reference PATH`` read (shared with `harness export-reframe`); bad input names the fix."""
    folder = pathlib.Path(path)
    if not folder.exists():
        raise UsageError(f"--reference {path}: does not exist; give a capture folder (e.g. gallery/<machine>) "
                         "or a results folder")
    problems: list[str] = []

    def records():      # one at a time: a reference of 50,000 runs is never held as records
        for f in results_files([folder], problems):
            yield from iter_records(f, problems)
    reference = Reference(records())
    warn_unreadable(problems)
    if not len(reference):
        why = next(iter(reference.refused.values()), "")
        raise UsageError(f"--reference {path}: holds no ok record with usable samples"
                         + (f" ({why})" if why else "") + "; give a capture or results folder of a run that completed")
    return reference


def add_records_options(p: argparse.ArgumentParser, out_help: str, out_required: bool = False) -> None:
    """RESULTS..., --workload and --out DIR of the verbs that read records and write a folder
    (export-thicket, model)."""
    p.add_argument("results", nargs="+", metavar="RESULTS", help="results files, results folders or capture folders")
    p.add_argument("--workload", help="only these workloads (names separated by commas)")
    p.add_argument("--out", metavar="DIR", required=out_required, help=out_help)


def out_folder(path: str | None) -> pathlib.Path | None:
    """``--out DIR`` checked: not a file, its parent there (created later, by the writer)."""
    if path is None:
        return None
    out = pathlib.Path(path)
    if out.exists() and not out.is_dir():
        raise UsageError(f"--out {out}: is a file; give a folder")
    if not out.parent.is_dir():
        raise UsageError(f"--out {out}: folder {out.parent} does not exist")
    return out


def selected_records(results: list[str], workload: str | None) -> list:
    """The readable records of ``results`` (unreadable lines warned about), of ``workload``'s
    names when given; none is bad input."""
    from harness.results.store import load_records

    records, problems = load_records(results)
    warn_unreadable(problems)
    if workload:
        wanted = {w.strip() for w in workload.split(",") if w.strip()}
        records = [r for r in records if r.workload.name in wanted]
    if not records:
        raise UsageError(f"no readable records in {', '.join(results)}"
                         + (f" of workload(s) {workload}" if workload else ""))
    return records
