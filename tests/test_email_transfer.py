"""email_transfer: the synthetic corpus, the PPMI+SVD vectors, and the label sweep."""
import numpy as np
import pytest

from conftest import read_jsonl
from harness_plugins.email_transfer.data import INTENTS, emails
from harness_plugins.email_transfer.embed import ppmi_svd, tokenize


def test_corpus_is_deterministic_with_four_intents_and_noise() -> None:
    texts, y = emails(400, seed=1, noise=0.0)
    assert emails(400, seed=1, noise=0.0)[0] == texts
    assert set(y) == set(range(len(INTENTS)))
    unsub = [t for t, label in zip(texts, y) if INTENTS[label] == "unsubscribe"]
    assert sum(any(w in t for w in ("remove", "unsubscribe", "stop", "list", "contact", "signed"))
               for t in unsub) == len(unsub)
    noisy, y2 = emails(400, seed=1, noise=0.9)
    assert list(y2) == list(y)   # labels are drawn first: noise changes the words only
    keywords = ("remove", "unsubscribe", "stop", "list", "contact", "signed")
    kept = [any(w in t.split() for w in keywords) for t, label in zip(noisy, y) if INTENTS[label] == "unsubscribe"]
    assert np.mean(kept) < 0.9   # most intent words of an email are replaced


def test_ppmi_svd_puts_words_of_one_intent_together() -> None:
    texts, _ = emails(3000, seed=2, noise=0.5)
    vocab, vec = ppmi_svd(texts, dim=32)
    assert vec.shape == (len(vocab), 32)
    np.testing.assert_allclose(np.linalg.norm(vec, axis=1), 1.0, rtol=1e-5)

    def cos(a: str, b: str) -> float:
        return float(vec[vocab[a]] @ vec[vocab[b]])

    # "mailing" and "remove" share the unsubscribe phrases; "demo" never appears with them
    assert cos("mailing", "remove") > cos("mailing", "demo") + 0.3
    assert [list(ids) for ids in tokenize(["mailing zzz remove"], vocab)] == [[vocab["mailing"], vocab["remove"]]]


@pytest.mark.torch
def test_label_sweep_reports_both_curves_and_the_crossover_verdict(harness_cli, tmp_path) -> None:
    r = harness_cli("run", "--workload", "email_transfer", "--size", "smoke", "--out", str(tmp_path))
    assert r.returncode == 0, r.stdout + r.stderr
    rec = read_jsonl(tmp_path / "results.jsonl")[0]
    m = rec["metrics"]
    assert m["label_counts"] == [25, 200] and m["synthetic"] is True
    for curve in (m["feature_based_f1"], m["fine_tune_f1"]):
        assert len(curve) == 2 and all(0.0 <= f <= 1.0 for f in curve)
        assert curve[1] > curve[0]   # more labels help both
    assert m["fine_tune_gain_by_n"] == pytest.approx([t - f for f, t in zip(m["feature_based_f1"], m["fine_tune_f1"])])
    assert m["crossover_found"] in (0, 1) and rec["claims"][0]["passed"] is (m["crossover_found"] == 1)
    assert {"feature_based", "fine_tune"} <= set(rec["phases"])
    bad = harness_cli("run", "--workload", "email_transfer", "--param", "labels=4:100", "--out", str(tmp_path))
    assert bad.returncode == 2 and "labels=4 is below the minimum 8" in bad.stderr
