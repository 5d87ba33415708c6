"""Claims that can fail, shown: plan and judge the control case of every claim.

A claim's :class:`~harness.judging.claims.Control` names a case (params on top of a size of the
workload) under which the claim must come out ``fail``. ``harness controls`` runs each control
case (and, for a relative claim, its baseline case) through the ordinary protocol, then judges
the claim on it with :meth:`Claim.evaluate_control`. A claim that passes under its own control
cannot tell a working reproduction from a broken one. Controls run where the verdict is made,
each workload's default size (suite all's), unless a size is named (``smoke`` in CI).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from harness.judging.case import record_evidence
from harness.judging.claims import Claim, ControlOutcome
from harness.judging.intervals import DEFAULT_CONFIDENCE
from harness.errors import UsageError
from harness.judging.baseline_rule import baseline_of
from harness.plan import Case, check_params, default_threads
from harness.registry import Registry
from harness.results.record import ControlRole, Record
from harness.workload import Workload

DEFAULT_SIZE = "default"     # each workload's default size: where suite all makes the verdicts


@dataclass
class ControlPlan:
    """One claim's control: the case judged and, for a relative claim, its baseline case."""

    workload: str
    claim: Claim
    case: Case
    baseline: Case | None


def control_size(workload: Workload, size: str) -> str:
    """The size a workload's controls run at: ``size``, or the workload's default for ``"default"``."""
    if size == DEFAULT_SIZE:
        return workload.default_size
    if size not in workload.sizes:
        raise UsageError(f"--size {size!r}: workload {workload.name!r} has sizes {', '.join(workload.sizes)}; "
                         f"name one of them, or leave --size out for each workload's default")
    return size


def _case(workload: Workload, overrides: dict[str, Any], size: str, backend: str | None, repeats: int | None,
          warmup: int | None, timeout: float) -> Case:
    params = dict(overrides)
    ranks = int(params.pop("ranks", workload.default_ranks))
    declared = int(params.pop("repeats", 0))   # a control that needs n replicates to fail (proportions)
    threads = int(params.pop("threads", 0)) or default_threads(ranks)
    resolved = workload.resolve_params(size, params)
    check_params(workload, resolved)
    return Case(workload=workload.name, size=size, params=resolved, backend=backend, ranks=ranks,
                threads=threads,
                repeats=max(declared, repeats or min(3, workload.default_repeats or 3)),
                warmup=warmup if warmup is not None else (1 if workload.default_warmup is None
                                                          else workload.default_warmup),
                timeout=timeout, swept={k: resolved[k] for k in params})


def plan_controls(registry: Registry, workloads: list[str], backend: str | None = None,
                  repeats: int | None = None, warmup: int | None = None,
                  timeout: float = 900.0, size: str = DEFAULT_SIZE) -> tuple[list[ControlPlan], list[ControlOutcome]]:
    """(the controls to run, the claims that declare none) for the named workloads, at ``size``
    (a size name, or ``"default"``: each workload's own)."""
    plans, undeclared = [], []
    for name in workloads:
        workload = registry.workload(name)
        at = control_size(workload, size)
        for claim in workload.claims:
            control = claim.control
            if control is None:
                undeclared.append(ControlOutcome(name, claim.text, "", problem="no control declared"))
                continue
            try:
                case = _case(workload, control.params, at, backend, repeats, warmup, timeout)
                baseline = None
                if claim.relative_to:
                    params = control.baseline_params(claim.relative_to)
                    if "ranks" in claim.relative_to and "threads" not in params:   # the claim's core rule
                        params["threads"] = baseline_of(case.key, claim.relative_to, claim.cores)[2] or 0
                    baseline = _case(workload, params, at, backend, repeats, warmup, timeout)
            except UsageError as exc:
                raise UsageError(f"workload {name!r}, claim {claim.text!r}: its control is invalid: {exc}") from None
            plans.append(ControlPlan(name, claim, case, baseline))
    return plans, undeclared


def only_claims(texts: list[str], plans: list[ControlPlan],
                undeclared: list[ControlOutcome]) -> tuple[list[ControlPlan], list[ControlOutcome]]:
    """The plans (and undeclared claims) of the claims named by their text; a text that names no
    claim of the selected workloads is bad input, listing the texts there are."""
    known = [p.claim.text for p in plans] + [o.claim for o in undeclared]
    unknown = [t for t in texts if t not in known]
    if unknown:
        raise UsageError(f"--claim {unknown[0]!r} names no claim of the selected workload(s); their claims: "
                         + "; ".join(dict.fromkeys(known)) + " (see `harness list claims`)")
    wanted = set(texts)
    return [p for p in plans if p.claim.text in wanted], [o for o in undeclared if o.claim in wanted]


def cases_in_order(plans: list[ControlPlan]) -> list[tuple[Case, ControlRole]]:
    """Every distinct case once: cases that are only baselines first, then those that are a baseline
    and a control, then the rest. A case is the ``control`` role when it is any claim's control case."""
    cases: dict[str, Case] = {}
    claims: dict[str, list[str]] = {}
    whys: dict[str, list[str]] = {}
    kinds: dict[str, list[str]] = {}
    is_control: set[str] = set()
    is_baseline: set[str] = set()
    for plan in plans:
        for case, role in ((plan.baseline, "baseline"), (plan.case, "control")):
            if case is None:
                continue
            cases.setdefault(case.case_id, case)
            claims.setdefault(case.case_id, []).append(plan.claim.text)
            whys.setdefault(case.case_id, []).append(plan.claim.control.why)
            kinds.setdefault(case.case_id, []).append(plan.claim.control.kind)
            (is_control if role == "control" else is_baseline).add(case.case_id)

    def rank(case_id: str) -> int:
        return 0 if case_id not in is_control else 1 if case_id in is_baseline else 2

    return [(cases[cid], ControlRole(claim="; ".join(dict.fromkeys(claims[cid])),
                                     role="control" if cid in is_control else "baseline",
                                     why="; ".join(dict.fromkeys(whys[cid])),
                                     kind="; ".join(dict.fromkeys(kinds[cid]))))
            for cid in sorted(cases, key=rank)]


def judge(plan: ControlPlan, records: dict[str, Record], workload: Workload,
          confidence: float = DEFAULT_CONFIDENCE) -> ControlOutcome:
    """The claim's verdict on its control case, given the run's records by case id: decided the
    same way as in a run (an interval at ``confidence``), so only a ``fail`` catches."""
    control = plan.claim.control
    outcome = ControlOutcome(plan.workload, plan.claim.text, control.why if control else "",
                             kind=control.kind if control else "")
    for case, role in ((plan.case, "control"), (plan.baseline, "baseline")):
        if case is None:
            continue
        rec = records.get(case.case_id)
        if rec is None or not rec.ok:
            outcome.problem = (f"the {role} case {case.label} did not run ok: "
                               f"{(rec.status + ': ' + rec.reason) if rec else 'not run'}")
            return outcome
    def judged(case: Case) -> dict[str, Any]:
        return record_evidence(records[case.case_id], workload)
    outcome.verdict = plan.claim.evaluate_control(judged(plan.case),
                                                  judged(plan.baseline) if plan.baseline is not None else None,
                                                  confidence)
    return outcome
