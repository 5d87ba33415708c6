"""``harness run``: plan the cases, run each in its own child process, append records."""
from __future__ import annotations

import argparse
import datetime as _dt
import pathlib
import sys
import uuid
from collections import Counter
from collections.abc import Callable

from rich.markup import escape

from harness import junit
from harness.judging import RunIndex
from harness.claims import summarize_claims
from harness.commands.common import (add_confidence_option, add_correction_option, console, err_console, machine, registry, warn,
                                     warn_problems, warn_unreadable)
from harness.until_decided import DEFAULT_BUDGET_S, DEFAULT_MAX_REPEATS
from harness.errors import Interrupted, UsageError
from harness.hardware.identity import display, profile_relation
from harness.execute import Session, prepare_launch, skip_reason
from harness.launch.launcher import LAUNCHERS, Launcher
from harness.outdir import claim_work_dir, lock_out, prepare_out, remove_stale_work
from harness.plan import Case
from harness.registry import Registry
from harness.request import RunRequest
from harness.report.closing import closing_table
from harness.results.store import RESULTS_NAME, read_records, stored_form
from harness.runloop import Finished, RunLoop
from harness.workload import SIZES

def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("run", help="run a suite or one workload",
                       description="Run every case of a suite (or one workload) and append one "
                                   "record per case to OUT/results.jsonl.")
    add_case_options(p)
    add_launcher_options(p)
    p.add_argument("--dry-run", action="store_true",
                   help="print each case and its exact launch command; run and write nothing")
    p.set_defaults(func=main)


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


def main(args: argparse.Namespace) -> int:
    return run(request_from_args(args).replace(dry_run=args.dry_run))


def run(request: RunRequest) -> int:
    """Run what ``request`` selects into its results folder; the exit status of `harness run`."""
    return run_with(request, RunLoop)[0]


def run_with(request: RunRequest, make_loop: Callable[..., RunLoop]) -> tuple[int, RunLoop | None]:
    """:func:`run` with the loop ``make_loop(session, results_file, console, budget, until_decided=,
    warn=)`` makes (a subclass that judges more, as `harness check`'s): (exit status, the loop;
    None after a dry run)."""
    why = request.launcher.problem()
    if why:
        raise UsageError(why)
    launcher = request.launcher
    junit_file = junit.check_target(request.junit)
    reg = registry()
    warn_problems(reg.problems)
    cases = request.cases(reg)
    if request.dry_run:
        return _dry_run(cases, reg, launcher, request.oversubscribe), None
    out = prepare_out(request.out)
    results_file = out / RESULTS_NAME
    out_lock = lock_out(out, exclusive=request.resume)  # noqa: F841 - held until the process ends
    stale = remove_stale_work(out)
    if stale:
        err_console.print(f"note: removed the work folders of {stale} earlier run(s) in {out}/.work "
                          "(killed or finished; their records keep the output tails)", markup=False)

    done: set[str] = set()
    if request.resume:
        previous, problems = read_records(results_file)
        done = {r.case_id for r in previous if r.ok}
        warn_unreadable(problems)
    todo = [c for c in cases if c.case_id not in done]
    if done:
        console.print(f"resume: {len(cases) - len(todo)} of {len(cases)} cases already ok, {len(todo)} to run")

    fp, profile, profile_data = machine()
    for note in (fp.get("tuning") or {}).get("warnings", []):
        err_console.print(f"note: {note}", markup=False)
    run_id = _dt.datetime.now().strftime("%Y%m%dT%H%M%S") + "-" + uuid.uuid4().hex[:6]
    session = Session(registry=reg, out_dir=out, run_id=run_id, hardware=fp, profile=profile,
                      profile_data=profile_data, launcher=launcher, oversubscribe=request.oversubscribe,
                      confidence=request.confidence, machine_name=request.machine_name)
    budget = request.decision_budget()
    if request.resume:
        session.index = RunIndex(previous)
    work_lock = claim_work_dir(session.work_dir)  # noqa: F841 - held until the process ends
    me = session.identity
    relation = profile_relation(profile)
    console.print(escape(f"run {run_id}: {len(todo)} case(s) on {display(me)} [{me['key']}]"
                         f"{f' ({relation})' if relation else ''} -> {results_file}"))

    loop = make_loop(session, results_file, console, budget, until_decided=request.until_decided, warn=warn)
    try:
        finished = loop.run(todo)
    except Interrupted as stop:
        if junit_file is not None:      # a CI job stopped at its time limit still says what ran
            stopped = [*loop.finished, *([loop.stopped] if loop.stopped else [])]
            _write_junit(junit_file, run_id, results_file, stopped, stop.name, todo[len(stopped):])
            err_console.print(f"JUnit XML of the {len(stopped)} case(s) before the stop in {junit_file}",
                              markup=False)
        raise
    stored = {f.record.id: f.stored for f in finished}
    for problem in reg.notify_run_finished([stored.get(r.id) or stored_form(r)[0] for r in session.index.records],
                                           out):
        warn(f"{problem.source}: {problem.reason}")
    counts = Counter(f.record.status for f in finished)
    verdicts = [v for f in finished for v in f.record.claims]
    total = ", ".join(f"{n} {s}" for s, n in sorted(counts.items()))
    console.print(f"done: {total or 'nothing to do'}; records in {results_file}")
    if verdicts or counts["failed"] or counts["timeout"]:
        console.print(closing_table([(f.case, f.record) for f in finished], request.correction, request.confidence))
    if verdicts:
        console.print(f"claims: {summarize_claims(verdicts)}")
    outputs_lost = False
    if junit_file is not None:
        try:
            _write_junit(junit_file, run_id, results_file, finished)
            console.print(f"JUnit XML in {junit_file}", markup=False)
        except UsageError as exc:    # the records are safe: say so, and fail the run (exit 1), not the input
            err_console.print(f"harness: error: the JUnit file was not written: {exc} (the records are in "
                              f"{results_file})", markup=False, soft_wrap=True)
            outputs_lost = True
    if todo and counts["skipped"] == len(todo):
        reasons = sorted({f.record.reason for f in finished if f.record.status == "skipped"})
        print(f"harness: error: nothing ran: all {len(todo)} case(s) were skipped "
              f"({'; '.join(reasons)[:300]})", file=sys.stderr)
        return 2, loop
    return (1 if counts["failed"] or counts["timeout"] or outputs_lost else 0), loop


def _write_junit(path: pathlib.Path, run_id: str, results_file: pathlib.Path, finished: list[Finished],
                 stopped_by: str | None = None, not_run: list[Case] | None = None) -> None:
    """The run as JUnit XML: at its end, or (``stopped_by`` a signal's name) when a signal stopped it
    before ``not_run``."""
    properties = {"run_id": run_id, "machine": finished[0].record.machine if finished else "",
                  "results": str(results_file)}
    if stopped_by is not None:
        properties["stopped_by"] = stopped_by
    junit.write(path, [junit.run_suite(f"harness run {run_id}", [(f.case, f.record) for f in finished], properties,
                                       not_run=[(c, f"not run: the run was stopped by {stopped_by}")
                                                for c in not_run or []])])


def _dry_run(cases: list[Case], reg: Registry, launcher: Launcher, oversubscribe: bool) -> int:
    """What would run, and how (the same :func:`prepare_launch` as the real run): nothing is
    launched or written."""
    console.print(f"dry run: {len(cases)} case(s); nothing is run or written")
    for i, case in enumerate(cases, 1):
        why = skip_reason(case, reg, launcher, oversubscribe)
        if why:
            console.print(f"[{i}] {escape(case.label)}  [yellow]skipped[/]: {escape(why)}", soft_wrap=True)
            continue
        launch = prepare_launch(case, reg, launcher, "SPEC.json")
        console.print(f"[{i}] {escape(case.label)}  repeats {case.repeats}+{case.warmup} warmup, "
                      f"timeout {case.timeout:g} s", soft_wrap=True)
        console.print("    " + escape(launch.shell_text()), soft_wrap=True, highlight=False)
    return 0
