"""``harness controls``: run every claim's control case and show that the claim fails there."""
from __future__ import annotations

import argparse
import datetime as _dt
import uuid

from rich.markup import escape

from harness.claims import ControlOutcome
from harness.commands.common import console, err_console, machine, registry, table, warn_problems
from harness.commands.run import add_confidence_option, check_protocol_options
from harness.controls import cases_in_order, judge, plan_controls
from harness.execute import Session, execute
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
                    "failing side) is caught; an inconclusive one proves nothing. "
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


def main(args: argparse.Namespace) -> int:
    check_protocol_options(args)
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
    for i, (case, role) in enumerate(todo, 1):
        record = execute(case, session)
        record.control = role
        records[case.case_id] = record
        verdicts = []
        for j, plan in enumerate(plans):
            if j in outcomes or plan.case.case_id not in records or (
                    plan.baseline is not None and plan.baseline.case_id not in records):
                continue
            outcomes[j] = judge(plan, records, reg.workload(plan.workload), args.confidence)
            if outcomes[j].verdict is not None and plan.case.case_id == case.case_id:
                verdicts.append(outcomes[j].verdict)
        if verdicts:
            record.claims = verdicts      # a control case records the claims judged on it as controls
        append_record(out / RESULTS_NAME, record)
        console.print(f"[{i}/{len(todo)}] {escape(case.label)} ({role.role}) {record.status} "
                      f"{record.duration_s:.1f}s {escape(record.reason.splitlines()[0][:120] if record.reason else '')}",
                      soft_wrap=True, highlight=False)
    finish_work(session.work_dir)
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
                  + f" ({args.confidence:.0%} intervals)")
    for o in bad:
        err_console.print(f"not shown to fail: {o.workload}: {o.claim}", markup=False)
    return 1 if bad or (args.strict and undeclared) else 0
