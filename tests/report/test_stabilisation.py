"""The stabilisation analysis and report section, on a store with known numbers."""

import json

import numpy as np
import pandas as pd
import pytest

from recaudit.audit import stabilisation_summary, stabilised_pairs
from recaudit.audit import AuditStore
from recaudit.perturb import parse

PLAIN = {"name": "gru4rec", "params": {"epochs": 3}}
FINEST = {**PLAIN, "stabilise": {"method": "finest"}}
PERTS = ("random-delete", "casper-delete")
SEEDS = (0, 1, 2)
N = 200


def _queries(rbo, rr):
    return pd.DataFrame({
        "query": np.arange(N), "user": np.arange(N), "target": np.arange(N) % 7,
        "rbo": rbo, "rbo_min": rbo, "rbo_max": rbo, "rbo_trunc": rbo, "average_overlap": rbo,
        "frbo": rbo * 0.9, "jaccard": rbo * 0.8, "mrr_base": rr, "mrr_pert": rr,
        "hit_base": (rr > 0.2) * 1.0, "hit_pert": (rr > 0.2) * 1.0, "ndcg_base": rr * 0.8,
        "ndcg_pert": rr * 0.8})


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    """Plain and FINEST trials: FINEST's RBO is the plain one + 0.1 on every query, its
    accuracy is the same; plain fits take 2 s, FINEST fits 5 s (the first trial of a seed also
    trained its baseline)."""
    path = tmp_path_factory.mktemp("stab") / "s.duckdb"
    expected = {}
    with AuditStore(path) as st:
        st.set_meta("config", {"name": "t", "perturbations": list(PERTS),
                               "metrics": {"k": 10, "p": 0.9, "depth": None}})
        for seed in SEEDS:
            rng = np.random.default_rng(seed)
            rr = rng.uniform(0, 0.6, N)
            for i, pert in enumerate(PERTS):
                rbo = rng.uniform(0.3, 0.8, N)
                expected[(pert, seed)] = rbo.mean()
                for model, label, secs in ((PLAIN, "gru4rec(epochs=3)", 2.0),
                                           (FINEST, "gru4rec(epochs=3)+finest", 5.0)):
                    shift = 0.1 if "stabilise" in model else 0.0
                    tid = f"{label}-{pert}-{seed}"
                    st.write_trial(
                        {"trial_id": tid, "baseline_key": f"{label}-{seed}", "audit": "t",
                         "dataset": "d", "model": "gru4rec", "model_label": label,
                         "perturbation": pert, **parse(pert).describe().to_dict(),
                         "seed": seed, "n_queries": N, "status": "done",
                         "spec": json.dumps({"model": model, "seed": seed}),
                         "fit_seconds": secs * (2 if i == 0 else 1), "total_seconds": 1.0},
                        _queries(rbo + shift, rr), {"kind": pert})
    return path, expected


def test_pairs_match_each_stabilised_trial_with_its_plain_twin(store):
    path, _ = store
    with AuditStore(path, read_only=True) as st:
        pairs = stabilised_pairs(st.trials())
    assert len(pairs) == len(PERTS) * len(SEEDS)
    assert (pairs.model == "gru4rec(epochs=3)").all() and (pairs.method == "finest").all()
    assert all(a.replace("+finest", "") == b for a, b in zip(pairs.trial_stab, pairs.trial_plain))


def test_summary_numbers(store):
    path, expected = store
    s = stabilisation_summary(path).set_index("perturbation")
    for pert in PERTS:
        r = s.loc[pert]
        plain = np.mean([expected[(pert, seed)] for seed in SEEDS])
        assert r.rbo_plain == pytest.approx(plain) and r.rbo_stab == pytest.approx(plain + 0.1)
        assert r.rbo_change == pytest.approx(0.1 / plain)
        assert r.frbo_change == pytest.approx(0.09 / (0.9 * plain))
        assert r.rbo_p < 1e-10 and r.n_pairs == N * len(SEEDS) and r.n_seeds == 3
        assert r.mrr_change == 0.0 and r.mrr_p == 1.0 and r.mrr_test == "constant"
        assert r.rbo_diff_ci_low == pytest.approx(0.1) == r.rbo_diff_ci_high
        assert r.fit_plain == pytest.approx(2.0) and r.fit_stab == pytest.approx(5.0)
        assert r.cost == pytest.approx(2.5)


def test_report_section(store):
    from recaudit.report import build_report, render_markdown

    path, _ = store
    report = build_report(path, figures=False)
    section = next(s for s in report.sections if s.key == "stabilisation")
    rls, acc = section.tables
    assert [r[3].text for r in rls.rows] == list(PERTS)
    assert all(r[6].text.endswith("†") and r[6].text.startswith("+") for r in rls.rows)
    assert acc.rows[0][2].text == "finest"
    assert acc.rows[0][-1].text == "×2.50" and acc.rows[0][4].text == "+0.0%"
    assert "Oh, Ustun, McAuley & Kumar 2024" in section.intro
    assert "Stabilisation" in render_markdown(report)


def test_no_section_without_stabilised_models(fake_report):
    assert "stabilisation" not in [s.key for s in fake_report.sections]


def test_a_labelled_plain_model_keeps_its_stabilised_twin(tmp_path):
    """A `label` on the plain model changes what it is called, not which trials pair: the
    stabilised variant (labelled from name and parameters) still finds it."""
    path = tmp_path / "labelled.duckdb"
    plain = {**PLAIN, "label": "GRU4Rec"}
    with AuditStore(path) as st:
        for model, label in ((plain, "GRU4Rec"), (FINEST, "gru4rec(epochs=3)+finest")):
            st.write_trial(
                {"trial_id": f"{label}-0", "baseline_key": f"{label}-b", "audit": "t",
                 "dataset": "d", "model": "gru4rec", "model_label": label,
                 "perturbation": "random-delete",
                 **parse("random-delete").describe().to_dict(), "seed": 0, "n_queries": N,
                 "status": "done", "spec": json.dumps({"model": model, "seed": 0}),
                 "fit_seconds": 1.0, "total_seconds": 1.0},
                _queries(np.full(N, 0.5), np.full(N, 0.3)), {"kind": "random-delete"})
        pairs = stabilised_pairs(st.trials())
    assert list(pairs.model) == ["GRU4Rec"] and list(pairs.trial_plain) == ["GRU4Rec-0"]
    assert list(pairs.stabilised) == ["gru4rec(epochs=3)+finest"]
