"""``harness controls``: run every claim's control case and show that the claim fails there."""
from __future__ import annotations

import argparse
import datetime as _dt
import pathlib
import time
import uuid
from dataclasses import dataclass

from rich.markup import escape

from rich.console import Console

from harness.commands.common import add_confidence_option, console, err_console, registry, table, warn, warn_problems
from harness.commands.running import open_session
from harness.execute import Session
from harness.export import junit
from harness.judging.claims import ControlOutcome
from harness.judging.controls import DEFAULT_SIZE, ControlPlan, cases_in_order, judge, only_claims, plan_controls
from harness.judging.intervals import DEFAULT_CONFIDENCE, level_text
from harness.judging.until_decided import DEFAULT_BUDGET_S, Budget
from harness.plan import Case
from harness.request import RunRequest
from harness.report.claim_text import measured_text
from harness.results.record import ControlRole, Record
from harness.results.store import RESULTS_NAME
from harness.runloop import RunLoop


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "controls", help="run each claim's control case and check that the claim fails there",
        description="A claim is only worth recording if it can fail. Every claim may name a control "
                    "(params on top of a size) under which it must come out 'fail'; this runs those cases "
                    "(and the baselines of relative claims) and judges each claim on its control, with "
                    "the same intervals as a run: only a claim decided 'fail' (its whole interval on the "
                    "failing side) is caught; an inconclusive one proves nothing, so a control case whose "
                    "claims are inconclusive gets more repeats first (--max-repeats, --budget). "
                    "Exit status 0: every control made its claim fail; 1: some claim passed or stayed "
                    "inconclusive under its control, could not be judged, or (with --strict) declares "
                    "no control. A control is an 'ablation' (it removes only the paper's mechanism, so a "
                    "pass there would mean the claim measures something else) or a 'sanity' check (it "
                    "breaks the case outright, or compares a case with itself); both are reported.")
    p.add_argument("--workload", help="workload names separated by commas (default: every registered one)")
    p.add_argument("--size", default=DEFAULT_SIZE,
                   help="where the controls run: a size name (smoke, small, paper) or 'default', each "
                        "workload's default size, where `run --suite all` makes its verdicts (the default; "
                        "smoke is the quick check CI runs)")
    p.add_argument("--claim", action="append", metavar="TEXT",
                   help="only this claim's control, by its text as `harness list claims` prints it "
                        "(e.g. 'speedup of train_s vs msf=1 >= 5'); repeatable (default: every claim)")
    p.add_argument("--backend", help="compute backend to request for every control case")
    p.add_argument("--repeats", type=int, help="measured repeats per case (default: min(3, the workload's))")
    p.add_argument("--warmup", type=int, help="warmup repeats per case (default: the workload's)")
    p.add_argument("--timeout", type=float, default=900.0, help="seconds before a case is killed (default 900)")
    p.add_argument("--out", default="results/controls",
                   help="folder for the control records (default: ./results/controls, apart from real results)")
    p.add_argument("--strict", action="store_true", help="a claim without a control is a failure too")
    p.add_argument("--junit", metavar="FILE",
                   help="also write JUnit XML for CI: one test case per claim, a failure when its control did "
                        "not make it fail (a harness defect), skipped when it declares no control")
    add_confidence_option(p)
    p.add_argument("--max-repeats", type=int, default=CONTROL_MAX_REPEATS, metavar="N",
                   help="a control case whose claims are still inconclusive gets more repeats, in rounds that "
                        f"double them, up to N (default {CONTROL_MAX_REPEATS}; the repeats given: none), with every "
                        "look judged at a level corrected for the number of looks, as run --until-decided")
    p.add_argument("--budget", default=None, metavar="DURATION",
                   help=f"time for those extra rounds over the whole command, e.g. 300, 90s, 10m "
                        f"(default {DEFAULT_BUDGET_S / 60:g}m)")
    p.set_defaults(func=main)


def _outcome_row(o: ControlOutcome) -> list[str]:
    v = o.verdict
    if v is None:
        result = "NO CONTROL" if o.problem == "no control declared" else "NOT JUDGED"
        return [o.workload, o.claim, o.kind, o.why, "", "", result + (f": {o.problem}" if o.problem else "")]
    if o.caught:
        result = "caught (decided fail under its control)"
    elif o.inconclusive:
        result = "INCONCLUSIVE under its control: not shown to fail"
    else:
        result = f"NOT CAUGHT: the claim is {v.status} under its control"
    if v.reason:
        result += f" ({v.reason})"
    return [o.workload, o.claim, o.kind, o.why, v.status, measured_text(v), result]


CONTROL_MAX_REPEATS = 12


@dataclass
class ControlsRequest:
    """What ``harness controls`` runs, its options by name: how another command (``harness
    capture``) asks for it without building a command line."""

    workload: str | None = None        # names separated by commas; None: every registered one
    size: str = DEFAULT_SIZE
    claim: list[str] | None = None
    backend: str | None = None
    repeats: int | None = None
    warmup: int | None = None
    timeout: float = 900.0
    out: str = "results/controls"
    strict: bool = False
    junit: str | None = None
    confidence: float = DEFAULT_CONFIDENCE
    max_repeats: int = CONTROL_MAX_REPEATS
    budget: str | None = None


def main(args: argparse.Namespace | ControlsRequest) -> int:
    started = time.monotonic()
    reg = registry()
    warn_problems(reg.problems)
    names = sorted(reg.workloads) if not args.workload else [n.strip() for n in args.workload.split(",") if n.strip()]
    request = RunRequest(workload=",".join(names) or None, backend=args.backend, repeats=args.repeats,
                         warmup=args.warmup, timeout=args.timeout, out=args.out, confidence=args.confidence,
                         until_decided=True, max_repeats=args.max_repeats, budget=args.budget, junit=args.junit)
    budget = request.decision_budget()
    junit_file = junit.check_target(request.junit)
    for n in names:
        reg.workload(n)
    if args.backend:
        reg.backend(args.backend)
    plans, undeclared = plan_controls(reg, names, args.backend, args.repeats, args.warmup, args.timeout,
                                      size=args.size)
    if args.claim:
        plans, undeclared = only_claims(args.claim, plans, undeclared)
    run_id = "controls-" + _dt.datetime.now().strftime("%Y%m%dT%H%M%S") + "-" + uuid.uuid4().hex[:6]
    opened = open_session(request, reg, run_id)
    session, out = opened.session, opened.out
    todo = cases_in_order(plans)
    sizes = ", ".join(sorted({case.size for case, _ in todo})) or "-"
    console.print(f"{len(plans)} control(s) of {len(names)} workload(s): {len(todo)} case(s) at size {sizes} "
                  f"-> {out / RESULTS_NAME}")
    loop = ControlLoop(session, opened.results_file, console, budget, plans, todo)
    loop.run([case for case, _ in todo])
    results = [loop.outcomes[j] for j in range(len(plans)) if j in loop.outcomes] + undeclared
    status = _conclude(args, results, len(plans), undeclared)
    if junit_file is not None:
        junit.write(junit_file, [junit.controls_suite(f"harness controls {run_id}", results, args.strict,
                                                      time.monotonic() - started)])
        console.print(f"JUnit XML in {junit_file}", markup=False)
    return status


class ControlLoop(RunLoop):
    """The run loop, judging each claim on its control case (and baseline) instead of the run's
    index; a control case whose verdicts are inconclusive gets rounds of more repeats."""

    def __init__(self, session: Session, results_file: pathlib.Path, console: Console, budget: Budget,
                 plans: list[ControlPlan], roles: list[tuple[Case, ControlRole]]) -> None:
        super().__init__(session, results_file, console, budget, warn=warn)
        self.plans, self.roles = plans, {case.case_id: role for case, role in roles}
        self.records: dict[str, Record] = {}
        self.outcomes: dict[int, ControlOutcome] = {}

    def tag(self, case: Case) -> str:
        return f" ({self.roles[case.case_id].role})"

    def mark(self, case: Case, record: Record) -> None:
        record.control = self.roles[case.case_id]

    def judge(self, case: Case, record: Record) -> None:
        """The plans this case completes, judged (again) at its control case's current level; a
        control case records the claims judged on it as controls."""
        self.records[case.case_id] = record
        verdicts = []
        for j, plan in enumerate(self.plans):
            if plan.case.case_id not in self.records or (plan.baseline is not None
                                                         and plan.baseline.case_id not in self.records):
                continue
            if case.case_id not in (plan.case.case_id, getattr(plan.baseline, "case_id", None)):
                continue
            level = self.records[plan.case.case_id].protocol.confidence
            self.outcomes[j] = judge(plan, self.records, self.session.registry.workload(plan.workload), level)
            if self.outcomes[j].verdict is not None and plan.case.case_id == case.case_id:
                verdicts.append(self.outcomes[j].verdict)
        if verdicts:
            record.claims = verdicts

    def wants_more(self, case: Case, record: Record) -> bool:
        # judged at the level its planned looks allow from the first look on
        return self.roles[case.case_id].role == "control" and record.ok and bool(record.claims)


def _conclude(args: argparse.Namespace | ControlsRequest, results: list[ControlOutcome], n_plans: int,
              undeclared: list[ControlOutcome]) -> int:
    """The table of claims under their controls, and the exit status."""
    outcomes_table = table("claims under their controls", "workload", "claim", "kind", "control", "verdict",
                           "measured", "result")
    for o in results:
        outcomes_table.add_row(*map(escape, _outcome_row(o)))
    console.print(outcomes_table)
    caught = sum(o.caught for o in results)
    undecided = sum(o.inconclusive for o in results)
    bad = [o for o in results if not o.caught and (o.verdict is not None or o.problem != "no control declared")]
    ablations = [o for o in results if o.kind == "ablation"]
    console.print(f"controls: {caught} of {n_plans} claim(s) decided fail under their control"
                  + (f"; {undecided} inconclusive" if undecided else "")
                  + (f"; {len(undeclared)} claim(s) declare no control" if undeclared else "")
                  + f" ({level_text(args.confidence)} intervals)")
    caught_ablations = sum(o.caught for o in ablations)
    console.print(f"of them: {caught_ablations} of {len(ablations)} ablation(s) of a paper's mechanism, "
                  f"{caught - caught_ablations} of {n_plans - len(ablations)} sanity check(s)")
    for o in bad:
        err_console.print(f"not shown to fail: {o.workload}: {o.claim}", markup=False)
    return 1 if bad or (args.strict and undeclared) else 0
