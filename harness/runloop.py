"""The one loop that runs planned cases, for ``harness run`` and ``harness controls`` alike.

:func:`harness.execute.execute` only measures a case and builds its record. This loop owns
everything around it: progress while a case runs, judging the claims (against the run's index of
ok records, which it feeds), rounds of more repeats while claims stay inconclusive, appending the
record, the ``harness_case_finished`` hook (which receives exactly the stored line), and signals:
SIGINT, SIGTERM and SIGHUP end the command after the interrupted case's record is written.
``harness controls`` subclasses it to judge claims on their control cases instead.
"""
from __future__ import annotations

import pathlib
import signal
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from rich.console import Console
from rich.markup import escape

from harness.judging.verdicts import summarize_claims
from harness.judging.until_decided import Budget, undecided_claims, until_decided
from harness.errors import Interrupted, check_interrupted, raise_interrupted
from harness.execute import CaseInterrupted, Session, execute
from harness.judging.stability import stability_note
from harness.judging.case import judge_claims
from harness.judging.launches import interleaved_launches, more_launches
from harness.output.outdir import finish_work
from harness.plan import Case, interleaving_groups
from harness.results.record import Record
from harness.results.store import append_record

STATUS_STYLE = {"ok": "green", "skipped": "yellow", "failed": "red", "timeout": "red"}


@dataclass
class Finished:
    """One case's outcome: its plan, its record, and the line stored for it (what hooks get)."""

    case: Case
    record: Record
    stored: dict[str, Any] = field(repr=False)


def summary_line(record: Record) -> str:
    """The median and interval, the claims' counts and the reason, for the case's closing line."""
    bits = []
    stats = record.stats
    if stats is not None and stats.median is not None and stats.ci95:
        lo, hi = stats.ci95
        bits.append(f"median {stats.median:.4g} s [{lo:.4g}, {hi:.4g}]")
    if record.claims:
        bits.append(f"claims: {summarize_claims(record.claims)}")
    if record.reason:
        bits.append(record.reason.splitlines()[0][:160])
    return "  ".join(bits)


class RunLoop:
    """Runs cases one after another into ``results_file``; see the module's docstring."""

    def __init__(self, session: Session, results_file: pathlib.Path, console: Console, budget: Budget,
                 until_decided: bool = False, warn: Callable[[str], None] | None = None) -> None:
        self.session, self.results_file, self.console = session, results_file, console
        self.warn = warn or (lambda text: console.print(f"warning: {text}", markup=False))
        self.budget, self.until_decided = budget, until_decided
        self.finished: list[Finished] = []
        self.stopped: Finished | None = None     # the case a signal stopped, with its record
        self.groups: dict[str, list[Case]] = {}  # case_id -> the cases its launches interleave with
        self.pending: dict[str, Record] = {}     # measured with an earlier case of its group, not yet judged

    # what a subclass may change -----------------------------------------------------------------

    def tag(self, case: Case) -> str:
        """Text after the case's label in its lines ('' here; controls add the case's role)."""
        return ""

    def mark(self, case: Case, record: Record) -> None:
        """Last changes to a record before it is written (controls set its role)."""

    def judge(self, case: Case, record: Record) -> None:
        """The claims of a measured record (ok, or failed its verification) against the run's
        index, and its stability note. Called for every record, measured or not."""
        if record.stats is None:
            return
        judge_claims(record, case, self.session.registry.workload(case.workload), self.session.index)
        if record.ok:
            record.reason = stability_note(record, self.session.registry.workload(case.workload),
                                           self.session.unstable_cov)

    def wants_more(self, case: Case, record: Record) -> bool:
        """Whether the case gets rounds of more repeats while its claims are inconclusive."""
        return (self.until_decided or case.until_decided) and record.ok

    def undecided(self, record: Record) -> list[str]:
        """What more repeats of this case could still decide (its inconclusive claims, here)."""
        return undecided_claims(record)

    # the loop ---------------------------------------------------------------------------------

    def run(self, cases: list[Case]) -> list[Finished]:
        """Run every case; raises :class:`Interrupted` after writing the record of a case a
        signal stopped."""
        for sig in (signal.SIGTERM, signal.SIGHUP):
            signal.signal(sig, raise_interrupted)
        width = len(str(len(cases)))
        self.groups = interleaving_groups(cases, self.session.registry)
        try:
            for i, case in enumerate(cases, 1):
                check_interrupted()
                prefix = f"[{i:>{width}}/{len(cases)}] {case.label}{self.tag(case)}"
                try:
                    record = self._measure_and_judge(case, prefix)
                except CaseInterrupted as stop:
                    case = stop.case or case
                    self.mark(case, stop.record)
                    self.stopped = Finished(case, stop.record, append_record(self.results_file, stop.record))
                    self._print(f"{escape(prefix)} [red]failed[/] {escape(stop.record.reason)}")
                    raise Interrupted(stop.signum, from_signal=True) from None
                self.mark(case, record)
                stored = append_record(self.results_file, record)
                self.session.index.add(record)
                self.finished.append(Finished(case, record, stored))
                for problem in self.session.registry.notify_case_finished(stored):
                    self.warn(f"{problem.source}: {problem.reason}")
                style = STATUS_STYLE[record.status]
                self._print(f"{escape(prefix)} [{style}]{record.status}[/] {record.duration_s:.1f}s "
                            f"{escape(summary_line(record))}")
        finally:
            finish_work(self.session.work_dir)
        return self.finished

    def _measure_and_judge(self, case: Case, prefix: str) -> Record:
        live = self.console.is_terminal
        if case.case_id in self.pending or case.case_id in self.groups:
            record = self._interleaved(case, prefix, live)
        elif live:
            with self.console.status(f"{escape(prefix)} starting (timeout {case.timeout:g} s)") as status:
                record = self._execute(case, lambda text: status.update(f"{escape(prefix)} {escape(text)}"), live)
        else:
            record = self._execute(case, lambda text: self._say(f"{prefix} {text}"), live)
        if case.launches > 1 and case.case_id not in self.groups:
            more_launches(record, case, lambda c: self._execute(c, None, live), self.session.unstable_cov,
                          lambda text: self._say(f"{prefix} {text}"))
        self.judge(case, record)
        if self.wants_more(case, record):
            until_decided(record, case, self.budget, lambda c: self._execute(c, None, live),
                          lambda r: self.judge(case, r), self.session.unstable_cov,
                          lambda text: self._say(f"{prefix} {text}"), wanting=self.undecided)
        return record

    def _interleaved(self, case: Case, prefix: str, live: bool) -> Record:
        """The case's record from its group's interleaved launches, run when the first case of the
        group comes up (the others' records wait in ``pending`` for their turn to be judged)."""
        if case.case_id not in self.pending:
            group = self.groups[case.case_id]
            running: list[Case] = []

            def execute(c: Case) -> Record:
                running[:] = [c]
                return self._execute(c, None, live)

            try:
                self.pending.update(interleaved_launches(group, execute, self.session.unstable_cov,
                                                         lambda text: self._say(f"{prefix} {text}")))
            except CaseInterrupted as stop:
                stop.case = running[0]
                raise
        return self.pending.pop(case.case_id)

    def _execute(self, case: Case, show: Callable[[str], None] | None, live: bool) -> Record:
        return execute(case, self.session, show=show, live=live)

    def _print(self, markup: str) -> None:
        self.console.print(markup, soft_wrap=True, highlight=False)

    def _say(self, text: str) -> None:
        self._print(escape(text))
