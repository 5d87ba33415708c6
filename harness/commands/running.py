"""Running a :class:`~harness.request.RunRequest`: plan its cases, run each in its own child
process through a run loop, append the records, print the closing table. The engine behind
`harness run`, `harness check` (its own loop) and `harness capture`."""
from __future__ import annotations

import datetime as _dt
import pathlib
import sys
import uuid
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

from rich.markup import escape

from harness.export import junit
from harness.judging.case import RunIndex
from harness.judging.verdicts import summarize_claims
from harness.commands.common import console, err_console, machine, registry, warn, warn_problems, warn_unreadable
from harness.errors import Interrupted, UsageError
from harness.hardware.identity import display, profile_relation
from harness.execute import Session, prepare_launch, skip_reason
from harness.launch.launcher import Launcher
from harness.output.outdir import claim_work_dir, lock_out, prepare_out, remove_stale_work
from harness.plan import Case, interleaving_groups
from harness.registry import Registry
from harness.request import RunRequest
from harness.report.closing import closing_table
from harness.results.store import RESULTS_NAME, read_records, stored_form
from harness.runloop import Finished, RunLoop


@dataclass
class OpenSession:
    """A run's session, its results folder and file, and the locks held while it runs."""

    session: Session
    out: pathlib.Path
    results_file: pathlib.Path
    locks: tuple[object, ...]


def open_session(request: RunRequest, reg: Registry, run_id: str) -> OpenSession:
    """The results folder made ready (created, locked, cleared of the work folders of killed
    runs), this machine fingerprinted and the session that runs the cases: the set-up `harness run`,
    `harness check` and `harness controls` share."""
    out = prepare_out(request.out)
    out_lock = lock_out(out, exclusive=request.resume)
    stale = remove_stale_work(out)
    if stale:
        err_console.print(f"note: removed the work folders of {stale} earlier run(s) in {out}/.work "
                          "(killed or finished; their records keep the output tails)", markup=False)
    fp, profile, profile_data = machine()
    for note in (fp.get("tuning") or {}).get("warnings", []):
        err_console.print(f"note: {note}", markup=False)
    session = Session(registry=reg, out_dir=out, run_id=run_id, hardware=fp, profile=profile,
                      profile_data=profile_data, launcher=request.launcher, oversubscribe=request.oversubscribe,
                      confidence=request.confidence, machine_name=request.machine_name)
    return OpenSession(session, out, out / RESULTS_NAME, (out_lock, claim_work_dir(session.work_dir)))


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
    opened = open_session(request, reg, _dt.datetime.now().strftime("%Y%m%dT%H%M%S") + "-" + uuid.uuid4().hex[:6])
    session, out, results_file, run_id = opened.session, opened.out, opened.results_file, opened.session.run_id

    done: set[str] = set()
    if request.resume:
        previous, problems = read_records(results_file)
        done = {r.case_id for r in previous if r.ok}
        warn_unreadable(problems)
    todo = [c for c in cases if c.case_id not in done]
    if done:
        console.print(f"resume: {len(cases) - len(todo)} of {len(cases)} cases already ok, {len(todo)} to run")

    budget = request.decision_budget()
    if request.resume:
        session.index = RunIndex(previous)
    me = session.identity
    relation = profile_relation(session.profile)
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
    groups = interleaving_groups(cases, reg)
    for i, case in enumerate(cases, 1):
        why = skip_reason(case, reg, launcher, oversubscribe)
        if why:
            console.print(f"[{i}] {escape(case.label)}  [yellow]skipped[/]: {escape(why)}", soft_wrap=True)
            continue
        launch = prepare_launch(case, reg, launcher, "SPEC.json")
        launches = "" if case.launches == 1 else f" in each of {case.launches} launches" + (
            f", interleaved with {', '.join(c.label for c in groups[case.case_id] if c is not case)}"
            if case.case_id in groups else "")
        console.print(f"[{i}] {escape(case.label)}  repeats {case.repeats}+{case.warmup} warmup{escape(launches)}, "
                      f"timeout {case.timeout:g} s", soft_wrap=True)
        console.print("    " + escape(launch.shell_text()), soft_wrap=True, highlight=False)
    return 0
