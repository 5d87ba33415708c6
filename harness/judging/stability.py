"""The note a record carries when its timings are unstable or too few to decide its claims."""
from __future__ import annotations

from typing import Any

from harness.results.record import Record


def stability_note(record: Record, workload: Any, unstable_cov: float) -> str:
    """'' or why the timings are unstable. Few samples are worth a note only where they leave a
    claim undecided that more repeats could decide (one judged on the repeats, inconclusive): a
    case a suite designed with one repeat, whose claims draw on seeds or are decided, needs none."""
    stats = record.stats
    if stats is None or not stats.unstable:
        return ""
    if stats.n < 3:
        wanting = [v.metric for v in record.claims if v.status == "inconclusive"
                   and workload.variation.get(v.metric, "repeats") == "repeats"]
        if not wanting:
            return ""
        return (f"only {stats.n} sample(s) for {', '.join(sorted(set(wanting)))}: "
                "use --repeats 3 or more (or --until-decided) to decide its claims")
    return f"unstable: CoV {stats.cov:.2f} above {unstable_cov:g}"
