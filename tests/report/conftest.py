"""A store filled directly with realistic numbers (no training), for fast report tests."""

import numpy as np
import pandas as pd
import pytest

from recaudit.audit import AuditStore
from recaudit.perturb import parse

EVIL = "fsq-<script>alert(1)</script>"
POSITIONS = ("beginning", "middle", "end")


def _queries(rng, n, rbo_level, acc_drop, base_rr):
    """Per-query results: RLS around ``rbo_level``, accuracy lowered by ``acc_drop``."""
    rbo = np.clip(rng.normal(rbo_level, 0.08, n), 0.05, 1.0)
    if rbo_level >= 1.0:
        rbo = np.ones(n)
    rr_pert = np.clip(base_rr * (1 - acc_drop) + rng.normal(0, 0.01, n), 0, 1)
    if acc_drop == 0 and rbo_level >= 1.0:
        rr_pert = base_rr.copy()
    hit_base = (base_rr > 0.1).astype(float)
    hit_pert = (rr_pert > 0.1).astype(float)
    return pd.DataFrame({
        "query": np.arange(n), "user": np.arange(n), "target": np.arange(n) % 7,
        "rbo": rbo, "rbo_min": rbo * 0.9, "rbo_max": np.minimum(rbo * 1.05, 1),
        "rbo_trunc": rbo * 0.95, "average_overlap": rbo * 0.97,
        "frbo": np.clip(rbo - 0.05, 0, 1) if rbo_level < 1 else rbo,
        "jaccard": np.clip(rbo - 0.15, 0, 1) if rbo_level < 1 else rbo,
        "mrr_base": base_rr, "mrr_pert": rr_pert, "hit_base": hit_base, "hit_pert": hit_pert,
        "ndcg_base": base_rr * 0.8, "ndcg_pert": rr_pert * 0.8})


def fill_store(path, *, dataset=EVIL, models=("gru4rec", "sasrec"), seeds=(0, 1, 2),
               perturbations=None, n_queries=60, meta=True, interactions=1234):
    """Write trials with plausible numbers: deletions lower RBO a little, CASPER more,
    more deletions more; removing the last items hurts accuracy and RLS most."""
    if perturbations is None:
        perturbations = (["none", "seed-only", "random-delete", "earliest-random-delete",
                          "latest-random-delete", "casper-delete", "casper-delete-k2",
                          "casper-delete-k4"]
                         + [f"remove-{p}-{n}" for p in POSITIONS for n in (1, 5, 10)])
    level = {"none": 1.0, "seed-only": 0.6, "random-delete": 0.85,
             "earliest-random-delete": 0.82, "latest-random-delete": 0.8,
             "casper-delete": 0.7, "casper-delete-k2": 0.66, "casper-delete-k4": 0.6,
             }
    with AuditStore(path) as st:
        if meta:
            st.set_meta("config", {"name": "report-test", "seeds": list(seeds),
                                   "perturbations": list(perturbations),
                                   "datasets": [{"name": dataset, "options": {"n_users": 60}}],
                                   "models": [{"name": m, "params": {"epochs": 3}}
                                              for m in models],
                                   "metrics": {"k": 10, "p": 0.9, "depth": None}})
            data = st.meta().get("data", {})
            data[dataset] = {"interactions": interactions, "users": 60, "items": 80,
                             "fingerprint": "abc123", "train": 1100, "test_queries": n_queries}
            st.set_meta("data", data)
        for mi, model in enumerate(models):
            for seed in seeds:
                rng = np.random.default_rng([mi, seed])
                base_rr = rng.uniform(0.0, 0.6, n_queries)
                for pert in perturbations:
                    if pert.startswith("remove-"):
                        _, pos, n = pert.split("-")
                        drop = 0.04 * int(n) if pos == "end" else 0.002 * int(n)
                        lev = 0.62 - (0.04 * int(n) if pos == "end" else 0.004 * int(n))
                    else:
                        drop, lev = (0.0 if pert == "none" else 0.01), level.get(pert, 0.75)
                    lev -= 0.05 * mi
                    if pert == "none":
                        lev = 1.0
                    q = _queries(rng, n_queries, lev, drop, base_rr)
                    tid = f"{dataset}-{model}-{seed}-{pert}"
                    st.write_trial(
                        {"trial_id": tid, "audit": "report-test", "dataset": dataset,
                         "model": model, "model_label": f"{model}(epochs=3)",
                         "perturbation": pert, **parse(pert).describe().to_dict(),
                         "seed": seed, "n_queries": n_queries,
                         "status": "done", "started": 1.7e9 + seed, "finished": 1.7e9 + 60,
                         "fit_seconds": 1.5 + mi, "rank_seconds": 0.1, "perturb_seconds":
                         interactions / 5000 if "casper" in pert else 0.01,
                         "total_seconds": 2.0 + mi,
                         "versions": '{"recaudit": "0.1.0", "torch": "2.13.0"}',
                         "host": "test-host"}, q, {"kind": pert})
    return path


@pytest.fixture(scope="session")
def fake_store(tmp_path_factory):
    return fill_store(tmp_path_factory.mktemp("fake") / "fake.duckdb")


@pytest.fixture(scope="session")
def fake_report(fake_store):
    from recaudit.report import build_report

    return build_report(fake_store)


@pytest.fixture(scope="session")
def raw_rows(fake_store):
    """Per-query rows joined with their trial labels, read straight from DuckDB."""
    import duckdb

    con = duckdb.connect(str(fake_store), read_only=True)
    try:
        return con.execute("SELECT * FROM query_results JOIN trials USING (trial_id)").df()
    finally:
        con.close()


@pytest.fixture
def make_store():
    """``fill_store`` for tests that need a store of their own shape."""
    return fill_store
