import numpy as np
import pandas as pd
import pytest

from recaudit.audit import AuditStore, summary, trial_summary, user_groups


def _fill(store, rows):
    for tid, seed, pert, q in rows:
        store.write_trial(
            {"trial_id": tid, "dataset": "d", "model": "m", "model_label": "m",
             "perturbation": pert, "seed": seed, "n_queries": len(q), "status": "done",
             "fit_seconds": 1.0, "total_seconds": 2.0},
            q, {"kind": pert})


def _queries(users, rr_base, rbo):
    n = len(users)
    z = np.zeros(n)
    return pd.DataFrame({"query": np.arange(n), "user": users, "target": z, "rbo": rbo,
                         "rbo_min": z, "rbo_max": z, "rbo_trunc": z, "average_overlap": z,
                         "frbo": rbo, "jaccard": rbo, "mrr_base": rr_base, "mrr_pert": rr_base,
                         "hit_base": z, "hit_pert": z, "ndcg_base": z, "ndcg_pert": z})


def test_summaries_and_user_groups_by_hand(tmp_path):
    with AuditStore(tmp_path / "s.duckdb") as st:
        # 5 users, one query each; baseline MRR order: u4 > u3 > u2 > u1 > u0
        q = _queries(np.arange(5), [0.1, 0.2, 0.3, 0.4, 0.5], [1.0, 0.8, 0.6, 0.4, 0.2])
        _fill(st, [("t0", 0, "a", q), ("t1", 1, "a", q.assign(rbo=q.rbo / 2))])
        s = trial_summary(st)
        assert s.rbo.tolist() == pytest.approx([0.6, 0.3])
        agg = summary(st)
        assert agg.rbo.iloc[0] == pytest.approx(0.45) and agg.seeds.iloc[0] == 2
        g = user_groups(st)
        t0 = g[g.trial_id == "t0"].set_index("group")
        # top 20 % of 5 users = 1 user (u4, rbo 0.2), bottom = u0 (rbo 1.0), mid = u1..u3
        assert t0.loc["high", "rbo"] == pytest.approx(0.2)
        assert t0.loc["low", "rbo"] == pytest.approx(1.0)
        assert t0.loc["mid", "rbo"] == pytest.approx(0.6)
        assert t0.loc["mid", "users"] == 3


def test_store_is_atomic_and_exports(tmp_path):
    path = tmp_path / "s.duckdb"
    q = _queries(np.arange(3), [1, 0.5, 0.2], [1, 1, 1])
    with AuditStore(path) as st:
        _fill(st, [("t0", 0, "a", q)])
        bad = q.drop(columns=["rbo"])
        with pytest.raises(KeyError):
            _fill(st, [("t1", 1, "a", bad)])
        assert st.finished() == {"t0"}  # the failed trial left nothing behind
        assert len(st.query_results()) == 3
        files = st.export(tmp_path / "out", "csv")
    assert {f.name for f in files} >= {"trials.csv", "query_results.csv"}
    assert pd.read_csv(tmp_path / "out" / "query_results.csv").shape[0] == 3
