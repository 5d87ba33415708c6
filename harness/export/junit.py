"""Results that CI systems read: JUnit XML for ``harness run``, ``harness controls`` and ``harness check``.

The common JUnit schema (Jenkins' junit-10.xsd, which GitLab, Jenkins and most CI read; the tests
validate against it) has test suites of test cases, each passing, ``failure`` or ``skipped``.
Mapping:

* a run: one test case per claim and case: pass; ``failure`` for fail; ``skipped``, with the
  reason, for inconclusive, not evaluated or not applicable (neither a pass nor a fail: the
  interval did not decide). One test case per case that failed or timed out (``failure``, with
  the tail of its output) and per case that was skipped (``skipped``, with why). A run stopped by a
  signal still writes its file: the case the signal stopped is a ``failure``, those it kept from
  running are ``skipped`` ("not run"), and the suite's ``stopped_by`` property names the signal.
* controls, as a suite of their own: one test case per claim; it passes only when the claim was
  decided fail under its control. A control that did not make its claim fail (it passed, or
  stayed inconclusive) is a harness defect: ``failure``; a claim without a control is
  ``skipped`` (``failure`` under ``--strict``).
* a check against a reference (``harness check``): one test case per case; ``failure`` when it is
  decided slower than the reference by more than the tolerance, or did not run ok; ``skipped``
  when inconclusive or without a reference; what differs from the reference's run in the text.
"""
from __future__ import annotations

import os
import pathlib
import re
import socket
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from harness.output.atomic import write_atomic
from harness.check import CaseCheck
from harness.judging.claims import ControlOutcome
from harness.errors import UsageError
from harness.report.claim_text import interval_source, measured_text

# Characters XML 1.0 cannot hold (a crashed case's output may have any byte).
_NOT_XML = re.compile("[^\u0009\u000a\u000d\u0020-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
MESSAGE_CHARS = 2000


def _clean(text: Any, limit: int | None = MESSAGE_CHARS) -> str:
    text = _NOT_XML.sub("?", str(text or ""))
    return text if limit is None or len(text) <= limit else text[:limit] + " ..."


@dataclass
class Case:
    """One JUnit test case: ``outcome`` is pass, failure or skipped."""

    classname: str
    name: str
    outcome: str = "pass"
    kind: str = ""            # the failure's or skip's type attribute
    message: str = ""
    detail: str = ""          # the element's text (an output tail, the interval's source)
    seconds: float = 0.0


@dataclass
class Suite:
    name: str
    cases: list[Case] = field(default_factory=list)
    properties: dict[str, str] = field(default_factory=dict)
    seconds: float = 0.0      # wall time of what the suite ran (its cases' durations)

    def count(self, outcome: str) -> int:
        return sum(c.outcome == outcome for c in self.cases)


def _time(seconds: float) -> str:
    return f"{max(0.0, seconds):.3f}"    # junit-10.xsd: digits, at most 3 decimals


def to_xml(suites: Sequence[Suite]) -> bytes:
    root = ET.Element("testsuites", name="hpml-harness",
                      tests=str(sum(len(s.cases) for s in suites)),
                      failures=str(sum(s.count("failure") for s in suites)), errors="0",
                      time=_time(sum(s.seconds for s in suites)))
    host = socket.gethostname()
    for s in suites:
        el = ET.SubElement(root, "testsuite", name=_clean(s.name), tests=str(len(s.cases)),
                           failures=str(s.count("failure")), errors="0", skipped=str(s.count("skipped")),
                           time=_time(s.seconds), hostname=_clean(host))
        if s.properties:
            props = ET.SubElement(el, "properties")
            for k, v in s.properties.items():
                ET.SubElement(props, "property", name=_clean(k), value=_clean(v))
        for c in s.cases:
            tc = ET.SubElement(el, "testcase", classname=_clean(c.classname), name=_clean(c.name),
                               time=_time(c.seconds))
            if c.outcome in ("failure", "skipped"):
                child = ET.SubElement(tc, c.outcome, type=_clean(c.kind), message=_clean(c.message))
                if c.detail:
                    child.text = _clean(c.detail, 20000)
    ET.indent(root)
    return b'<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="utf-8") + b"\n"


def check_target(path: str | None, option: str = "--junit") -> pathlib.Path | None:
    """``--junit FILE`` (or another output file named by ``option``) checked before anything runs: its folder must exist, and it must not be a
    folder or a special file (a FIFO would hang the end of a long run)."""
    if path is None:
        return None
    target = pathlib.Path(path)
    if target.is_dir():
        raise UsageError(f"{option} {path}: is a folder; give a file name in it")
    if target.exists() and not target.is_file():
        raise UsageError(f"{option} {path}: not a regular file; give a file name")
    if not target.parent.is_dir():
        raise UsageError(f"{option} {path}: the folder {target.parent} does not exist; create it first")
    if not os.access(target.parent, os.W_OK):     # a read-only file system too, even for root
        raise UsageError(f"{option} {path}: the folder {target.parent} is not writable; give a writable place")
    return target


def write(path: pathlib.Path, suites: Sequence[Suite]) -> None:
    write_atomic(path, to_xml(suites))


def run_suite(name: str, finished: Sequence[tuple[Any, Any]], properties: dict[str, str] | None = None,
              not_run: Sequence[tuple[Any, str]] = ()) -> Suite:
    """The suite of a run from its (Case, Record) pairs: see the module's docstring. ``not_run``:
    (Case, why) of cases a signal kept from running, each skipped with why."""
    suite = Suite(name=name, properties=dict(properties or {}),
                  seconds=sum(r.duration_s or 0.0 for _, r in finished))
    for case, record in finished:
        cls = record.workload.name
        label = case.label
        if record.status in ("failed", "timeout"):
            suite.cases.append(Case(cls, label, "failure", record.status, record.reason or record.status,
                                    record.stderr_tail, record.duration_s))
        elif record.status == "skipped":
            suite.cases.append(Case(cls, label, "skipped", "skipped", record.reason or "skipped",
                                    seconds=record.duration_s))
        for v in record.claims:
            tc = Case(cls, f"{label}: {v.text}")
            measured = measured_text(v)
            where = interval_source(v)
            if v.status == "fail":
                tc.outcome, tc.kind = "failure", "claim fails"
                tc.message = f"measured {measured}" + (f" ({where})" if where else "") + f"; claim {v.text}"
            elif v.status != "pass":
                tc.outcome, tc.kind = "skipped", v.status.replace("_", " ")
                tc.message = v.reason or v.status.replace("_", " ")
                if measured:
                    tc.message += f"; measured {measured}" + (f" ({where})" if where else "")
            suite.cases.append(tc)
    for case, why in not_run:
        suite.cases.append(Case(case.workload, case.label, "skipped", "not run", why))
    return suite


def controls_suite(name: str, outcomes: Sequence[ControlOutcome], strict: bool, seconds: float = 0.0) -> Suite:
    """The suite of ``harness controls``: see the module's docstring."""
    suite = Suite(name=name, seconds=seconds)
    for o in outcomes:
        tc = Case(o.workload, f"{o.claim} under its control ({o.why})" if o.why else o.claim)
        v = o.verdict
        if v is None:
            undeclared = o.problem == "no control declared"
            tc.outcome = "failure" if (not undeclared or strict) else "skipped"
            tc.kind = "no control" if undeclared else "not judged"
            tc.message = o.problem or "not judged"
        elif not o.caught:
            tc.outcome = "failure"
            tc.kind = "control not caught" if v.status == "pass" else f"control {v.status.replace('_', ' ')}"
            tc.message = (f"the claim is {v.status.replace('_', ' ')} under its control (measured {measured_text(v)}"
                          f"{'; ' + v.reason if v.reason else ''}): a control that does not make its claim "
                          "fail is a harness defect")
        suite.cases.append(tc)
    return suite


def check_suite(name: str, checks: Sequence[CaseCheck], properties: dict[str, str] | None = None,
                seconds: float = 0.0) -> Suite:
    """The suite of ``harness check``: one test case per case; ``failure`` when it is decided
    slower than the reference (or did not run ok), ``skipped`` with why when it is inconclusive or
    has no reference."""
    suite = Suite(name=name, properties=dict(properties or {}), seconds=seconds)
    for c in checks:
        tc = Case(c.label.split("[", 1)[0], c.label)
        figure = f"this / reference {c.ratio_text}" if c.ratio is not None else ""
        detail = "\n".join([*(f"differs: {d}" for d in c.differs), *(f"claim changed: {x}" for x in c.claims_changed)])
        if c.status in ("fail", "not ok"):
            tc.outcome, tc.kind = "failure", "slower than the reference" if c.status == "fail" else "not ok"
        elif c.status != "pass":
            tc.outcome, tc.kind = "skipped", c.status
        tc.message = "; ".join(x for x in (figure, c.reason if c.status != "pass" else "") if x)
        tc.detail = detail
        suite.cases.append(tc)
    return suite
