"""Which case is a case's baseline: one rule, for planning (a baseline runs before the cases
judged against it, :mod:`harness.plan`) and for judging (the baseline's record is found in the
run, :mod:`harness.judging.case`).

A case is named by its :class:`CaseKey` (workload, size, params, requested backend, ranks,
threads), which a planned ``Case`` and a stored ``Record`` both give (``.key``), so the rule
compares like with like. A relative claim (``relative_to={"msf": 1}``) compares a case with the
case whose key differs only in those params, or in ``ranks``/``threads``; a baseline at another
rank count gets the case's total cores or its threads per rank, as the claim's ``cores`` says.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, eq=True)
class CaseKey:
    """What decides a case's numbers, as planning and records both name it."""

    workload: str
    size: str
    params: dict[str, Any]
    backend: str | None     # the backend asked for (None: the default)
    ranks: int
    threads: int

    @property
    def judged_params(self) -> dict[str, Any]:
        """The params claims see: the size (a ``when`` on ``size`` limits a claim to the
        paper-size run), the workload's params (a param named ``size`` wins), ranks and threads."""
        return {"size": self.size, **self.params, "ranks": self.ranks, "threads": self.threads}


def is_baseline(relative_to: dict[str, Any] | None, params: dict[str, Any]) -> bool:
    """True for the case a relative claim compares others with (``params``: judged params)."""
    return relative_to is not None and all(params.get(k) == v for k, v in relative_to.items())


def is_baseline_of_any(key: CaseKey, claims: list[Any]) -> bool:
    """True when the case is the baseline of one of ``claims``."""
    params = key.judged_params
    return any(is_baseline(claim.relative_to, params) for claim in claims)


def baseline_of(key: CaseKey, relative_to: dict[str, Any],
                cores: str = "equal") -> tuple[dict[str, Any], int, int | None]:
    """(params, ranks, threads) of the case that ``key``'s case is compared with under
    ``relative_to``. A baseline at another rank count gets the case's total cores
    (``cores="equal"``: 2 x 1 against 1 x 2) or its threads per rank (``"per_rank"``: 2 x 1 against
    1 x 1); threads None: any, where the case's cores do not split evenly over the baseline's ranks."""
    params = dict(key.params, **{k: v for k, v in relative_to.items() if k not in ("ranks", "threads")})
    ranks = relative_to.get("ranks", key.ranks)
    if "threads" in relative_to or "ranks" not in relative_to or cores == "per_rank":
        return params, ranks, relative_to.get("threads", key.threads)
    total = key.ranks * key.threads
    return params, ranks, total // ranks if total % ranks == 0 else None


def is_baseline_for(other: CaseKey, key: CaseKey, relative_to: dict[str, Any], cores: str = "equal") -> bool:
    """True when ``other`` is the case ``key``'s case is compared with under ``relative_to``."""
    if (other.workload, other.size, other.backend) != (key.workload, key.size, key.backend):
        return False
    params, ranks, threads = baseline_of(key, relative_to, cores)
    return other.params == params and other.ranks == ranks and threads in (None, other.threads)
