"""The analysis functions the report reads: distributions and paired comparisons."""

import numpy as np
import pytest
from scipy import stats

from recaudit.audit import compare_perturbations, query_distribution


def test_query_distribution_matches_numpy(fake_store, raw_rows):
    dist = query_distribution(fake_store, ("rbo", "jaccard"))
    assert set(dist.metric) == {"rbo", "jaccard"}
    for (model, pert, metric) in [("sasrec(epochs=3)", "casper-delete", "rbo"),
                                  ("gru4rec(epochs=3)", "remove-end-5", "jaccard")]:
        x = raw_rows[(raw_rows.model_label == model) & (raw_rows.perturbation == pert)][metric]
        x = x.to_numpy()
        r = dist[(dist.model_label == model) & (dist.perturbation == pert)
                 & (dist.metric == metric)].iloc[0]
        q1, med, q3 = np.percentile(x, [25, 50, 75])  # linear interpolation, as quantile_cont
        assert (r.q1, r["median"], r.q3) == pytest.approx((q1, med, q3))
        assert r.n == len(x) and r["mean"] == pytest.approx(x.mean())
        iqr = q3 - q1
        assert r.whislo == pytest.approx(x[x >= q1 - 1.5 * iqr].min())
        assert r.whishi == pytest.approx(x[x <= q3 + 1.5 * iqr].max())


def test_query_distribution_whiskers_stop_at_the_fences(make_store, tmp_path):
    import pandas as pd

    from recaudit.audit import AuditStore

    # values 0..9 plus an outlier 100: q1 = 2.5, q3 = 7.5, upper fence 15 -> whisker 9
    x = np.array([*range(10), 100.0])
    z = np.zeros(len(x))
    q = pd.DataFrame({"query": np.arange(len(x)), "user": np.arange(len(x)), "target": z,
                      **{c: z for c in ["rbo_min", "rbo_max", "rbo_trunc", "average_overlap",
                                        "frbo", "jaccard", "mrr_base", "mrr_pert", "hit_base",
                                        "hit_pert", "ndcg_base", "ndcg_pert"]}, "rbo": x})
    with AuditStore(tmp_path / "w.duckdb") as st:
        st.write_trial({"trial_id": "t", "dataset": "d", "model": "m", "model_label": "m",
                        "perturbation": "p", "seed": 0, "status": "done"}, q, None)
    r = query_distribution(tmp_path / "w.duckdb", ("rbo",)).iloc[0]
    assert (r.q1, r.q3, r.whislo, r.whishi) == pytest.approx((2.5, 7.5, 0.0, 9.0))
    with pytest.raises(ValueError, match="unknown per-query metric"):
        query_distribution(tmp_path / "w.duckdb", ("mrr",))


def test_compare_pairs_by_seed_and_query(fake_store, raw_rows):
    out = compare_perturbations(fake_store, "remove-end-5", "remove-end-5", metric="mrr_pert",
                                metric_b="mrr_base")
    assert len(out) == 2  # one row per model
    r = out[out.model == "gru4rec(epochs=3)"].iloc[0]
    q = raw_rows[(raw_rows.model_label == "gru4rec(epochs=3)")
                 & (raw_rows.perturbation == "remove-end-5")].sort_values(["seed", "query"])
    d = q.mrr_pert.to_numpy() - q.mrr_base.to_numpy()
    assert r.pairs == len(d) == 180
    # the protocol runs on each query's difference averaged over the three seeds
    per_query = d.reshape(3, 60).mean(axis=0)
    expected = stats.wilcoxon(per_query).pvalue if stats.shapiro(per_query).pvalue < 1e-3 \
        else stats.ttest_1samp(per_query, 0).pvalue
    assert r.p_protocol == pytest.approx(expected)
    assert r.p == max(r.p_protocol, r.p_levels) and r.levels == "seeds and queries"
    assert r.a == "remove-end-5" and r.metric == "mrr_pert-mrr_base"
    with pytest.raises(ValueError, match="unknown per-query metric"):
        compare_perturbations(fake_store, "remove-end-5", "remove-end-5", metric="recall_pert")
