"""``harness controls``: run every claim's control case and show that the claim fails there."""
from __future__ import annotations

import argparse
import datetime as _dt
import signal
import uuid

from rich.markup import escape

from harness.claims import ControlOutcome
from harness.commands.common import (add_confidence_option, console, err_console, machine, registry, table,
                                     warn_problems)
from harness.commands.run import check_protocol_options, decision_budget
from harness.controls import cases_in_order, judge, plan_controls
from harness.decide import DEFAULT_BUDGET_S, until_decided
from harness.intervals import level_text
from harness.errors import Interrupted, raise_interrupted
from harness.execute import CaseInterrupted, Session, execute
from harness.outdir import claim_work_dir, finish_work, lock_out, prepare_out
from harness.report.tables import measured_text
from harness.results.record import Record
from harness.results.store import RESULTS_NAME, append_record


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "controls", help="run each claim's control case and check that the claim fails there",
        description="A claim is only worth recording if it can fail. Every claim may name a control "
                    "(params at size smoke) under which it must come out 'fail'; this runs those cases "
                    "(and the baselines of relative claims) and judges each claim on its control, with "
                    "the same intervals as a run: only a claim decided 'fail' (its whole interval on the "
                    "failing side) is caught; an inconclusive one proves nothing, so a control case whose "
                    "claims are inconclusive gets more repeats first (--max-repeats, --budget). "
                    "Exit status 0: every control made its claim fail; 1: some claim passed or stayed "
                    "inconclusive under its control, could not be judged, or (with --strict) declares "
                    "no control.")
    p.add_argument("--workload", help="workload names separated by commas (default: every registered one)")
    p.add_argument("--backend", help="compute backend to request for every control case")
    p.add_argument("--repeats", type=int, help="measured repeats per case (default: min(3, the workload's))")
    p.add_argument("--warmup", type=int, help="warmup repeats per case (default: the workload's)")
    p.add_argument("--timeout", type=float, default=900.0, help="seconds before a case is killed (default 900)")
    p.add_argument("--out", default="results/controls",
                   help="folder for the control records (default: ./results/controls, apart from real results)")
    p.add_argument("--strict", action="store_true", help="a claim without a control is a failure too")
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
        return [o.workload, o.claim, o.why, "", "", result + (f": {o.problem}" if o.problem else "")]
    if o.caught:
        result = "caught (decided fail under its control)"
    elif o.inconclusive:
        result = "INCONCLUSIVE under its control: not shown to fail"
    else:
        result = f"NOT CAUGHT: the claim is {v.status} under its control"
    if v.reason:
        result += f" ({v.reason})"
    return [o.workload, o.claim, o.why, v.status, measured_text(v), result]


CONTROL_MAX_REPEATS = 12


def main(args: argparse.Namespace) -> int:
    check_protocol_options(args)
    budget = decision_budget(args)
    reg = registry()
    warn_problems(reg.problems)
    names = sorted(reg.workloads) if not args.workload else [n.strip() for n in args.workload.split(",") if n.strip()]
    for n in names:
        reg.workload(n)
    if args.backend:
        reg.backend(args.backend)
    plans, undeclared = plan_controls(reg, names, args.backend, args.repeats, args.warmup, args.timeout)
    out = prepare_out(args.out)
    fp, profile, profile_data = machine()
    run_id = "controls-" + _dt.datetime.now().strftime("%Y%m%dT%H%M%S") + "-" + uuid.uuid4().hex[:6]
    session = Session(registry=reg, out_dir=out, run_id=run_id, hardware=fp, profile=profile,
                      profile_data=profile_data, confidence=args.confidence)
    locks = (lock_out(out, exclusive=False), claim_work_dir(session.work_dir))  # noqa: F841 - held to the end
    todo = cases_in_order(plans)
    console.print(f"{len(plans)} control(s) of {len(names)} workload(s): {len(todo)} case(s) at size smoke "
                  f"-> {out / RESULTS_NAME}")
    records: dict[str, Record] = {}
    outcomes: dict[int, ControlOutcome] = {}
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, raise_interrupted)
    for i, (case, role) in enumerate(todo, 1):
        try:
            record = _control_case(case, role, session, plans, records, outcomes, reg, budget)
        except CaseInterrupted as stop:    # Ctrl-C, SIGTERM, SIGHUP: the case's record is kept
            stop.record.control = role
            append_record(out / RESULTS_NAME, stop.record)
            console.print(f"[{i}/{len(todo)}] {escape(case.label)} ({role.role}) failed "
                          f"{escape(stop.record.reason)}", soft_wrap=True, highlight=False)
            finish_work(session.work_dir)
            raise Interrupted(stop.signum, from_signal=True) from None
        append_record(out / RESULTS_NAME, record)
        console.print(f"[{i}/{len(todo)}] {escape(case.label)} ({role.role}) {record.status} "
                      f"{record.duration_s:.1f}s {escape(record.reason.splitlines()[0][:120] if record.reason else '')}",
                      soft_wrap=True, highlight=False)
    finish_work(session.work_dir)
    return _conclude(args, plans, outcomes, undeclared)


def _control_case(case, role, session: Session, plans, records: dict[str, Record],
                  outcomes: dict[int, ControlOutcome], reg, budget) -> Record:
    """Run one case of the controls, judge the plans it completes, and give a control case whose
    verdicts are inconclusive its rounds of more repeats."""
    record = execute(case, session)
    record.control = role
    records[case.case_id] = record
    ready = [j for j, plan in enumerate(plans) if j not in outcomes and plan.case.case_id in records
             and (plan.baseline is None or plan.baseline.case_id in records)]

    def rejudge(rec: Record, ready: list[int] = ready) -> None:
        """The plans this case completes, judged (again) at its control case's current level."""
        verdicts = []
        for j in ready:
            plan = plans[j]
            level = records[plan.case.case_id].protocol.confidence
            outcomes[j] = judge(plan, records, reg.workload(plan.workload), level)
            if outcomes[j].verdict is not None and plan.case.case_id == rec.case_id:
                verdicts.append(outcomes[j].verdict)
        if verdicts:
            rec.claims = verdicts      # a control case records the claims judged on it as controls

    rejudge(record)
    if role.role == "control" and record.ok and record.claims:
        # judged at the level its planned looks allow from the first look on, and given rounds of
        # more repeats while its control verdicts are inconclusive
        until_decided(record, case, budget, lambda c: execute(c, session), rejudge, session.unstable_cov,
                      lambda text, c=case: console.print(f"    {escape(c.label)}: {escape(text)}",
                                                          soft_wrap=True, highlight=False))
    return record


def _conclude(args: argparse.Namespace, plans, outcomes: dict[int, ControlOutcome], undeclared) -> int:
    """The table of claims under their controls, and the exit status."""
    results = [outcomes[j] for j in range(len(plans)) if j in outcomes] + undeclared
    outcomes_table = table("claims under their controls", "workload", "claim", "control", "verdict",
                           "measured", "result")
    for o in results:
        outcomes_table.add_row(*map(escape, _outcome_row(o)))
    console.print(outcomes_table)
    caught = sum(o.caught for o in results)
    undecided = sum(o.inconclusive for o in results)
    bad = [o for o in results if not o.caught and (o.verdict is not None or o.problem != "no control declared")]
    console.print(f"controls: {caught} of {len(plans)} claim(s) decided fail under their control"
                  + (f"; {undecided} inconclusive" if undecided else "")
                  + (f"; {len(undeclared)} claim(s) declare no control" if undeclared else "")
                  + f" ({level_text(args.confidence)} intervals)")
    for o in bad:
        err_console.print(f"not shown to fail: {o.workload}: {o.claim}", markup=False)
    return 1 if bad or (args.strict and undeclared) else 0
