"""A record's claims judged by the code that reads it, not only by the code that wrote it.

Records of one workload and one protocol version measured the same work (harness.work_identity),
so the claims the workload declares now apply to all of them: a threshold, a comparison or a
min_equal_n edited since a capture is applied to that capture's stored replicates (the evidence
each verdict keeps), instead of orphaning it. The record's own verdicts stay in the record; a
claim that needs what an old record lacks is ``not_evaluated`` saying so, never the old verdict
passed off as the new one. Records of other protocol versions keep their own verdicts.
"""
from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from harness.judging.claims import Claim, ClaimVerdict
from harness.judging.intervals import DEFAULT_CONFIDENCE
from harness.judging.verdicts import COMPARISONS, rejudge

if TYPE_CHECKING:
    from harness.results.record import Record

DECIDED = ("pass", "fail", "inconclusive")


def identity(metric: str, transform: str | None, relative_to: dict[str, Any] | None,
             when: dict[str, Any] | None, later_defaults: Mapping[str, Any] | None = None) -> str:
    """What makes a verdict the verdict of a claim: its figure and the cases it speaks about (a
    threshold, a comparison, a description may change and it is still the same claim). A
    condition on a param added later that its default meets (``epochs_factor == 1``) narrows
    nothing the earlier records ran, so it is no part of the identity."""
    later = later_defaults or {}
    when_json = {k: list(v) for k, v in (when or {}).items()
                 if not (k in later and COMPARISONS[v[0]](later[k], v[1]))}
    return json.dumps([metric, transform, relative_to or None, when_json or None], sort_keys=True, default=str)


def _same_rule(v: ClaimVerdict, c: Claim) -> bool:
    return (v.comparison == c.comparison and v.threshold == c.threshold and v.kind == c.kind
            and (v.min_equal_n or c.min_equal_n) == c.min_equal_n
            and (list(v.bounds) if v.bounds else None) == (list(c.bounds) if c.bounds else None))


def judged_now(stored: list[ClaimVerdict], claims: list[Claim], params: dict[str, Any],
               later_defaults: Mapping[str, Any] | None = None) -> list[ClaimVerdict]:
    """The current ``claims`` on a record whose own verdicts are ``stored`` (``params``: the
    record's params with ranks, threads and size, for the claims' ``when``; ``later_defaults``:
    the defaults of the workload's params added later, which a record made before them ran at)."""
    params = {**(later_defaults or {}), **params}
    by_identity: dict[str, ClaimVerdict] = {}
    for v in stored:
        by_identity.setdefault(identity(v.metric, v.transform, v.relative_to, v.when, later_defaults), v)
    out = []
    for claim in claims:
        fresh = claim._verdict("not_evaluated", "")
        why = claim.applies(params)
        if why:
            out.append(dataclasses.replace(fresh, status="not_applicable", reason=why))
            continue
        old = by_identity.get(identity(claim.metric, claim.transform, claim.relative_to, claim.when, later_defaults))
        if old is None:
            out.append(dataclasses.replace(fresh, reason=(
                f"not evaluable on this record (needs {claim.metric!r} judged as this claim: the claim is newer "
                "than the record; rerun the case)")))
            continue
        # the stored verdict with the claim's current wording and rule, its figures and evidence kept
        now = dataclasses.replace(old, **{f: getattr(fresh, f) for f in (
            "comparison", "threshold", "paper_value", "source", "description", "kind", "bounds", "min_equal_n",
            "premise", "at_quality", "has_control")})
        if _same_rule(old, claim) or old.status not in DECIDED:
            out.append(now)
            continue
        if not old.evidence:
            out.append(dataclasses.replace(now, status="not_evaluated", interval=None, reason=(
                f"not evaluable on this record (needs the replicates behind its verdict, which it did not keep); "
                f"against the rule it was made with ({old.text}) it was {old.status}")))
            continue
        again = rejudge(now, old.confidence or DEFAULT_CONFIDENCE)
        note = f"judged again by the current claim from the record's replicates (it said {old.status} against {old.text})"
        out.append(dataclasses.replace(again, reason=f"{again.reason}; {note}" if again.reason else note))
    return out


def current_verdicts(record: Record, claims_now: Mapping[str, tuple[Any, ...]] | None) -> list[Any]:
    """The record's verdicts under the claims its workload declares now ({workload: (its current
    work version, claims)}; harness.judging.current_claims), for an ok measurement of the current
    protocol version; else the record's own."""
    current = (claims_now or {}).get(record.workload.name)
    if current is None or record.control is not None or not record.ok or current[0] != record.work_version:
        return record.claims
    params = {**record.params, "ranks": record.launch.ranks, "threads": record.launch.threads, "size": record.size}
    return judged_now(record.claims, current[1], params, current[2] if len(current) > 2 else None)
