"""Verdicts over a family of claims: what a run decides when its 25-40 claims are read together.

Each claim is judged on its own interval at the run's level (95 %), so a run of 40 claims with
nothing true to find would still decide about two of them. This module gives, beside each
verdict, the verdict after a correction over the family (the claims of one run):

- ``holm`` (the default): Holm's step-down procedure, family-wise error at 1 - level: the
  chance that any claim of the run is decided wrongly stays below 5 %. The default because a
  reproduction table is read claim by claim, and each decided line should be trusted.
- ``bh``: Benjamini-Hochberg, false-discovery rate at 1 - level: fewer decisions lost, at the
  price of about 5 % of the decided ones being wrong.
- ``none``: the verdicts as judged.

A claim's p-value here is the smallest 1 - level at which its own replicates decide it (its
interval, bisected over levels with :func:`harness.judging.verdicts.rejudge`; a claim its own level does
not decide counts with p = 1, since no correction can decide it): the procedures need one per
claim, and an interval verdict has one exactly. Verdicts that keep no replicates (records from
before schema 3) cannot be judged again: they are left out of the family and marked so.
"""
from __future__ import annotations

import math
from collections.abc import Hashable, Iterable, Sequence

from harness.judging.claims import ClaimVerdict
from harness.judging.verdicts import rejudge
from harness.judging.intervals import DEFAULT_CONFIDENCE

CORRECTIONS = ("holm", "bh", "none")
DEFAULT_CORRECTION = "holm"
NAMES = {"holm": "Holm (family-wise)", "bh": "Benjamini-Hochberg (false discovery)", "none": "no correction"}
JUDGED = ("pass", "fail", "inconclusive")
NOT_CORRECTED = "not corrected (no replicates kept)"


def decision_p(verdict: ClaimVerdict, confidence: float = DEFAULT_CONFIDENCE) -> float | None:
    """The smallest 1 - level at which the verdict's replicates decide its claim; 1.0 when its
    own level (``confidence``) does not decide it (no correction can then decide it, so its
    exact value does not matter); None when it keeps no replicates to judge again."""
    if verdict.status not in JUDGED or not verdict.evidence:
        return None
    decided = lambda p: rejudge(verdict, 1 - p).status in ("pass", "fail")  # noqa: E731
    if not decided(1 - confidence):
        return 1.0
    floor = sample_floor(verdict)
    lo, hi = math.log(1e-12), math.log(1 - confidence)   # bisected on log p: decided at hi, maybe not at lo
    if decided(math.exp(lo)):
        return max(1e-12, floor)
    for _ in range(30):
        mid = (lo + hi) / 2
        lo, hi = (lo, mid) if decided(math.exp(mid)) else (mid, hi)
        if hi - lo < 1e-3:
            break
    return max(math.exp(hi), floor)


def sample_floor(verdict: ClaimVerdict) -> float:
    """The smallest p-value the verdict's sample can support when its interval has no width:
    replicates that are all equal (16 identical chains) give a t or bootstrap interval of zero
    width at every level, so its bisected p would be 1e-12, whatever n. Their evidence is then
    what the two-sided sign test can say of n replicates all on the decided side: 2 x 0.5^n (16
    replicates: 3.1e-5; 5: 0.0625, which no correction lets decide). 0 for an interval with a
    width, and for a figure declared exact (``source: exact``: one deterministic value is the
    whole evidence, no sample)."""
    interval, evidence = verdict.interval, verdict.evidence or {}
    if (not interval or interval[0] is None or interval[1] is None or interval[0] != interval[1]
            or evidence.get("source") == "exact"):
        return 0.0
    n = len(evidence.get("values") or ())
    base = evidence.get("baseline_values")
    if base:
        n = min(n, len(base))
    return min(1.0, 2.0 * 0.5 ** n) if n else 1.0


def corrected_statuses(verdicts: Sequence[ClaimVerdict], method: str = DEFAULT_CORRECTION,
                       confidence: float = DEFAULT_CONFIDENCE) -> list[str]:
    """Each verdict's status after ``method`` over all of them (one family): a decided verdict
    either stays or becomes 'inconclusive'; verdicts that cannot be judged again are
    :data:`NOT_CORRECTED`; claims not judged keep their status."""
    if method not in CORRECTIONS:
        raise ValueError(f"correction {method!r}: choose one of {', '.join(CORRECTIONS)}")
    out = [v.status for v in verdicts]
    if method == "none":
        return out
    alpha = 1 - confidence
    ps = {i: decision_p(v, confidence) for i, v in enumerate(verdicts) if v.status in JUDGED}
    for i, p in ps.items():
        if p is None:
            out[i] = NOT_CORRECTED
    family = sorted(((p, i) for i, p in ps.items() if p is not None))
    m = len(family)
    kept: set[int] = set()
    if method == "holm":
        for rank, (p, i) in enumerate(family):
            if p > alpha / (m - rank):
                break
            kept.add(i)
    else:   # bh: every claim whose adjusted p is within alpha (the step-up rule)
        kept = {i for (_, i), q in zip(family, benjamini_hochberg([p for p, _ in family])) if q <= alpha}
    for _, i in family:
        if out[i] in ("pass", "fail") and i not in kept:
            out[i] = "inconclusive"
    return out


def corrected_by_family(members: Iterable[tuple[Hashable, Hashable, ClaimVerdict]],
                        method: str = DEFAULT_CORRECTION) -> dict[Hashable, str]:
    """``{key: status after method}`` for ``(family, key, verdict)`` triples: the verdicts of one
    family (a run id: the claims one run judged) corrected together, at the level they were judged
    at; what the report's tables and `harness show` count."""
    families: dict[Hashable, list[tuple[Hashable, ClaimVerdict]]] = {}
    for family, key, verdict in members:
        families.setdefault(family, []).append((key, verdict))
    out: dict[Hashable, str] = {}
    for items in families.values():
        judged = [verdict for _, verdict in items]
        level = next((v.confidence for v in judged if v.confidence), DEFAULT_CONFIDENCE)
        out.update(zip((key for key, _ in items), corrected_statuses(judged, method, level)))
    return out


def benjamini_hochberg(p_values: Sequence[float]) -> list[float]:
    """Benjamini-Hochberg adjusted p-values (reject where adjusted <= the false-discovery rate)."""
    from scipy import stats
    if not len(p_values):
        return []
    return [float(p) for p in stats.false_discovery_control(list(p_values), method="bh")]


def summary(before: Sequence[str], after: Sequence[str], method: str) -> str:
    """'after Holm (family-wise) over 39 claims: 28 of 35 decided verdicts stay decided'."""
    judged = sum(s in JUDGED for s in before)
    decided = sum(s in ("pass", "fail") for s in before)
    stay = sum(a in ("pass", "fail") for a in after)
    return (f"after {NAMES[method]} over the {judged} claim(s) judged: {stay} of {decided} decided verdict(s) "
            "stay decided")
