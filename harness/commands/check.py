"""``harness check --reference DIR``: is this node as fast as its kind?

Runs a suite (or reads results already made) and judges each case against the reference's
record of the same machine key, case and workload version (:mod:`harness.check`): pass, fail,
inconclusive or no reference. Exit status 1 on any decided fail, 0 otherwise, 2 on bad input.
"""
from __future__ import annotations

import argparse
import dataclasses
import pathlib
import time
from collections import Counter

from rich.markup import escape

from harness.export import junit
from harness.output import strict_json
from harness.output.atomic import write_atomic
from harness.check import TOLERANCE, CaseCheck, Reference, check_record
from harness.commands.common import console, current_claims, err_console, registry, table, warn_unreadable
from harness.commands.options import add_case_options, add_launcher_options, load_reference, request_from_args
from harness.commands.running import run_with
from harness.errors import UsageError
from harness.judging.intervals import DEFAULT_CONFIDENCE
from harness.results.record import Record
from harness.results.store import load_records
from harness.runloop import RunLoop

STATUS_STYLE = {"pass": "green", "fail": "red", "inconclusive": "yellow", "no reference": "dim", "not ok": "red"}


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "check", help="judge this node against a reference of its kind (a capture): pass, fail, inconclusive",
        description="Run a suite (--suite/--workload, as `harness run`) or read results (RESULTS), and judge "
                    "each case against the reference's record of the same machine key, case and workload "
                    "version: the ratio of median seconds per repeat with a bootstrap interval; pass when the "
                    "whole interval is within --tolerance of the reference or faster, fail when the whole "
                    "interval is slower than that, inconclusive otherwise; a case the reference lacks (another "
                    "machine kind, another workload version) is 'no reference', never a pass. Claims whose "
                    "verdict changed from the reference are listed. Exit status 1 on any decided fail, 0 "
                    "otherwise, 2 on bad input.")
    p.add_argument("results", nargs="*", metavar="RESULTS",
                   help="results files or folders to check instead of running (then no --suite/--workload)")
    p.add_argument("--reference", required=True, metavar="DIR",
                   help="the reference: a capture (e.g. gallery/<machine>) or any results folder of this "
                        "machine kind")
    p.add_argument("--tolerance", type=float, default=TOLERANCE,
                   help=f"how much slower than the reference still passes, as a fraction (default {TOLERANCE:g}, "
                        f"{100 * TOLERANCE:.0f} %%)")
    p.add_argument("--json", metavar="FILE", help="also write the checks as JSON to FILE (a list, one object per case)")
    add_case_options(p, required=False)
    add_launcher_options(p)
    p.set_defaults(func=main, confidence=None)   # None: a stored record's own level, unless --confidence is given


class CheckLoop(RunLoop):
    """The run loop, judging each case against the reference as well as its claims; with
    ``--until-decided`` an inconclusive check gets rounds of more repeats, as an inconclusive claim."""

    def __init__(self, *args, reference: Reference, tolerance: float, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.reference, self.tolerance = reference, tolerance
        self.checks: dict[str, CaseCheck] = {}
        self.claims_now = current_claims()     # both sides judged by the claims of this code

    def judge(self, case, record: Record) -> None:
        super().judge(case, record)
        self.checks[record.case_id] = check_record(record, self.reference, self.tolerance,
                                                   claims_now=self.claims_now)

    def undecided(self, record: Record) -> list[str]:
        check = self.checks.get(record.case_id)
        against = ["the time against the reference"] if check is not None and check.status == "inconclusive" else []
        return super().undecided(record) + against


def main(args: argparse.Namespace) -> int:
    if not 0 <= args.tolerance < 10:
        raise UsageError(f"--tolerance {args.tolerance}: give a fraction such as 0.1 (10 %)")
    running = args.suite is not None or args.workload is not None
    if running == bool(args.results):
        raise UsageError("give either RESULTS to check or --suite/--workload to run (one of them)")
    junit_file = junit.check_target(args.junit)
    json_file = junit.check_target(args.json, "--json")
    reference = load_reference(args.reference)
    started = time.monotonic()
    given_confidence = args.confidence          # None unless --confidence was given
    if running:
        args.confidence = DEFAULT_CONFIDENCE if args.confidence is None else args.confidence
        request = request_from_args(args).replace(junit=None)   # --junit is the check's, written below
        code, loop = run_with(request, lambda *a, **kw: CheckLoop(*a, reference=reference,
                                                                  tolerance=args.tolerance, **kw))
        if code == 2:
            return code
        checks = list(loop.checks.values())
        if request.resume:      # the cases --resume did not run are judged from the records already there
            checks += resumed_checks(request, loop, reference, args.tolerance, given_confidence)
    else:
        records, problems = load_records(args.results)
        warn_unreadable(problems)
        if not records:
            raise UsageError(f"no readable records in {', '.join(args.results)}")
        claims_now = current_claims()
        checks = [check_record(r, reference, args.tolerance, confidence=given_confidence, claims_now=claims_now)
                  for r in records]
    _print(checks, args.reference, args.tolerance)
    if json_file is not None:
        write_atomic(json_file, strict_json.dumps([dataclasses.asdict(c) for c in checks], indent=2) + "\n")
        console.print(f"checks as JSON in {json_file}", markup=False)
    if junit_file is not None:
        junit.write(junit_file, [junit.check_suite(f"harness check against {args.reference}", checks,
                                                   {"reference": str(args.reference),
                                                    "tolerance": f"{args.tolerance:g}"},
                                                   time.monotonic() - started)])
        console.print(f"JUnit XML in {junit_file}", markup=False)
    judged = [c for c in checks if c.status not in ("no reference", "not ok")]
    if not judged:
        err_console.print("no case was judged against the reference: exit 1 (a check without evidence is no "
                          "pass)", markup=False)
    return 1 if any(c.status in ("fail", "not ok") for c in checks) or not judged else 0


def resumed_checks(request, loop: CheckLoop, reference: Reference, tolerance: float,
                   confidence: float | None) -> list[CaseCheck]:
    """Checks of the planned cases that --resume found already ok in the results folder (their
    latest ok record each), which the run loop did not run and so did not judge."""
    from harness.results.store import RESULTS_NAME, read_records

    planned = {c.case_id for c in request.cases(registry())}
    previous, problems = read_records(pathlib.Path(request.out) / RESULTS_NAME)
    warn_unreadable(problems)
    latest: dict[str, Record] = {}
    for r in previous:
        if r.ok and r.case_id in planned and r.case_id not in loop.checks:
            latest[r.case_id] = r
    return [check_record(r, reference, tolerance, confidence=confidence, claims_now=loop.claims_now)
            for r in latest.values()]


def _print(checks: list[CaseCheck], reference: str, tolerance: float) -> None:
    t = table(f"against {reference} (tolerance {tolerance:.0%})", "case", "this / reference", "check", "why")
    for c in checks:
        why = c.reason if c.status != "pass" else ""
        if c.claims_changed:
            why += ("; " if why else "") + "claims changed: " + "; ".join(c.claims_changed)
        style = STATUS_STYLE[c.status]
        t.add_row(escape(c.label), c.ratio_text, f"[{style}]{c.status}[/]", escape(why[:300]))
    console.print(t)
    counts = Counter(c.status for c in checks)
    console.print("checked: " + ", ".join(f"{n} {s}" for s, n in sorted(counts.items())), markup=False)
    if counts["no reference"] == len(checks):
        err_console.print("note: no case had a reference: is the reference from this machine kind, with the "
                          "same workload versions? (`harness show` names a record's machine key)", markup=False)
