"""The paper's table for a run: macro-F1 per family x strategy x n (mean ± standard error over
seeds, with each arm's mean training loss in brackets: how far it was trained), fine-tuned
MiniLM's paired gain over the fixed rival and the crossovers of the means, written as Markdown next to the records (``email_transfer_f1.md``)."""
from __future__ import annotations

import pathlib
from typing import Any

TABLE_NAME = "email_transfer_f1.md"


def f1_table(record: dict[str, Any]) -> str:
    """One record's table as Markdown."""
    from harness_plugins.email_transfer import FAMILIES, STRATEGIES

    m = record["metrics"]
    columns = [(f, s) for f in FAMILIES for s in STRATEGIES if f"f1_{f}_{s}" in m]
    head = ["n", *(f"{f} {s}" for f, s in columns)]
    if "fine_tune_gain_by_n" in m:
        head += [f"MiniLM fine-tuned gain over {m['rival']}"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for i, n in enumerate(m["label_counts"]):
        row = [str(n)] + [f"{m[f'f1_{f}_{s}'][i]:.3f} ± {m[f'f1_{f}_{s}_se'][i]:.3f}" + _loss(m, f, s, i)
                          for f, s in columns]
        if "fine_tune_gain_by_n" in m:
            row += [f"{m['fine_tune_gain_by_n'][i]:+.3f} ± {m['fine_tune_gain_se_by_n'][i]:.3f}"]
        lines.append("| " + " | ".join(row) + " |")
    crossings = [f"n* {f}: {m.get(f'crossover_n_{f}') or 'none'}" for f in FAMILIES if f"crossover_n_{f}" in m]
    if "crossover_n" in m:
        crossings.append(f"n* MiniLM fine-tuned vs {m['rival']} (means): {m['crossover_n'] or 'none'}")
    p = record["params"]
    budget = f"{p['epochs']} epochs" if p["budget"] == "epochs" else f"{p['updates']} updates"
    return "\n".join([f"### {record['workload']['name']}[{record['size']}] (MiniLM {m['encoder']}, {p['seeds']} seeds, "
                      f"{budget} of {p['batch']}, {p['n_test']} test emails)", "",
                      "macro-F1, mean ± standard error over seeds [training loss]", "", *lines, "", "; ".join(crossings),
                      f"test emails verbatim in the training pool: {m['test_verbatim_email_share']:.1%}; "
                      f"their intent sentences: {m['test_verbatim_sentence_share']:.1%}", ""])


def _loss(metrics: dict[str, Any], family: str, strategy: str, i: int) -> str:
    losses = metrics.get(f"train_loss_{family}_{strategy}")   # records before issue 43 have none
    return f" [{losses[i]:.2f}]" if losses else ""


def write_tables(records: list[dict[str, Any]], out_dir) -> pathlib.Path | None:
    mine = [r for r in records if r["workload"]["name"] == "email_transfer" and r["status"] == "ok"]
    if not mine:
        return None
    path = pathlib.Path(out_dir) / TABLE_NAME
    path.write_text("# email_transfer: feature-based vs fine-tuned (synthetic emails)\n\n"
                    + "\n".join(f1_table(r) for r in mine))
    return path
