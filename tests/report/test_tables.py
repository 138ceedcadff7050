"""Table numbers against independent computations from the raw per-query rows."""

import numpy as np
import pytest
from scipy import stats

from recaudit.report._audit import _tables as T
from recaudit.report import load

MAIN = ["random-delete", "earliest-random-delete", "latest-random-delete", "casper-delete",
        "seed-only"]


@pytest.fixture(scope="module")
def data(fake_store):
    return load(fake_store)


@pytest.fixture(scope="module")
def per_trial(raw_rows):
    return raw_rows.groupby(["model_label", "perturbation", "seed"]).mean(numeric_only=True)


def test_main_perturbations_leave_out_counts_positions_and_none(data):
    assert data.main_perturbations() == MAIN
    counts = data.counts()
    assert counts.set_index("perturbation")["count"].to_dict() == {
        "casper-delete": 1, "casper-delete-k2": 2, "casper-delete-k4": 4}


def _two_level(raw_rows, model, pert, metric):
    from recaudit.stats import estimate_mean

    q = raw_rows[(raw_rows.model_label == model) & (raw_rows.perturbation == pert)]
    return estimate_mean(q[metric].to_numpy(), q.seed.to_numpy(), q["query"].to_numpy())


def test_rls_table_is_the_two_level_interval_with_decided_marks(data, raw_rows):
    tables = {t.key.split("-")[1]: t for t in T.rls_tables(data)}
    assert set(tables) == {"rbo", "frbo", "jaccard"}
    for metric, table in tables.items():
        models = list(table.columns[1:])
        rows = {r[0].text: r[1:] for r in table.rows}
        assert list(rows) == [*MAIN[:-1], "none", "seed-only"]
        for j, model in enumerate(models):
            means = {}
            for pert, cells in rows.items():
                est = _two_level(raw_rows, model, pert, metric)
                assert cells[j].value == pytest.approx(est.mean)
                if est.se > 0:
                    low, high = est.interval()
                    assert (cells[j].low, cells[j].high) == pytest.approx(
                        (max(low, 0), min(high, 1)))
                means[pert] = est.mean
            ranked = sorted((v, p) for p, v in means.items() if p not in ("none", "seed-only"))
            marks = {p: rows[p][j].mark for p in rows}
            # CASPER is ~0.1 below the rest in every seed: decided, and the only mark
            assert ranked[0][1] == "casper-delete" and marks["casper-delete"] == "best"
            assert sum(m is not None for m in marks.values()) == 1
        assert "Not decided" not in table.caption


def test_a_tie_is_not_marked_and_the_caption_says_so(tmp_path, make_store):
    # random- and earliest-random deletion differ by 0.03 in the fake data, with 60 queries
    # per seed and 0.08 noise: three seeds cannot tell them apart
    store = make_store(tmp_path / "t.duckdb", models=("gru4rec",), seeds=(0, 1, 2),
                       perturbations=("random-delete", "earliest-random-delete"))
    table = T.rls_tables(load(store))[0]
    assert all(r[1].mark is None for r in table.rows)
    assert "Not decided: gru4rec(epochs=3): earliest-random-delete vs random-delete" \
        in table.caption


def test_accuracy_table_baseline_row_and_differences(data, per_trial):
    table = T.accuracy_table(data)
    model = table.rows[0][1].text
    rows = [r for r in table.rows if r[1].text == model]
    assert rows[0][2].text == "without perturbation"
    base = per_trial.loc[(model, "random-delete")]["mrr_base"].mean()
    assert rows[0][3].value == pytest.approx(base)
    for r in rows[1:]:
        t = per_trial.loc[(model, r[2].text)]
        assert r[3].value == pytest.approx(t.mrr_pert.mean())
        assert r[4].value == pytest.approx((t.mrr_pert - t.mrr_base).mean())
        assert r[8].value == pytest.approx((t.ndcg_pert - t.ndcg_base).mean())
        assert r[4].low <= r[4].value <= r[4].high


def _paired(x, y, alpha=1e-3):
    """The decision of recaudit.stats.paired_test on three seeds of 60 queries: the papers'
    protocol on each query's difference averaged over seeds, and the two-level interval."""
    from recaudit.stats import paired_test

    d = (x - y).reshape(3, 60).mean(axis=0)
    proto = stats.wilcoxon(d).pvalue if stats.shapiro(d).pvalue < alpha \
        else stats.ttest_1samp(d, 0).pvalue
    t = paired_test(x, y, np.repeat(np.arange(3), 60), np.tile(np.arange(60), 3),
                    normality=alpha)
    assert t.p_protocol == pytest.approx(proto)
    return max(proto, t.p_levels)


def test_position_table_changes_and_significance(data, raw_rows):
    table = T.position_table(data)
    assert [r[2].text for r in table.rows[:3]] == ["beginning", "middle", "end"]
    assert all(r[3].text == "10" for r in table.rows)
    model = table.rows[2][1].text
    end = table.rows[2]
    q = raw_rows[(raw_rows.model_label == model)].sort_values(["seed", "query"])
    pert = q[q.perturbation == "remove-end-10"]
    change = 100 * (pert.hit_pert.mean() - pert.hit_base.mean()) / pert.hit_base.mean()
    assert end[4].value == pytest.approx(change)
    p_mrr = _paired(pert.mrr_pert.to_numpy(), pert.mrr_base.to_numpy())
    assert end[5].p_value == pytest.approx(p_mrr)
    assert end[5].significant == (p_mrr < 1e-3) and end[5].text.endswith("†") == end[5].significant
    seed_only = q[q.perturbation == "seed-only"]
    p_frbo = _paired(pert.frbo.to_numpy(), seed_only.frbo.to_numpy())
    assert end[7].p_value == pytest.approx(p_frbo)
    assert end[7].value == pytest.approx(pert.frbo.mean())
    # removing the last 10 items lowers MRR by ~40 % in this data: every query says so
    # (p_protocol tiny), but three seeds bound the two-level p-value (t with 2 df) above
    # Betello et al.'s 1e-3: significant at 1 %, not at their level
    assert end[5].value < -30 and 1e-3 < end[5].p_value < 0.01 and not end[5].significant


def test_position_table_without_seed_only_has_no_rls_marks(tmp_path, make_store):
    store = make_store(tmp_path / "s.duckdb", models=("gru4rec",), seeds=(0, 1, 2),
                       perturbations=("random-delete", "remove-end-2", "remove-end-4"))
    table = T.position_table(load(store))
    assert len(table.rows) == 1 and table.rows[0][3].text == "4"
    assert table.rows[0][7].p_value is None and not table.rows[0][7].significant
    assert "no seed-only" in table.caption


def test_sections_absent_without_data(tmp_path, make_store):
    from recaudit.report import build_report

    store = make_store(tmp_path / "s.duckdb", models=("gru4rec",), seeds=(0,),
                       perturbations=("random-delete",), meta=False)
    report = build_report(store, figures=False)
    keys = [s.key for s in report.sections]
    assert keys == ["rls", "accuracy", "groups", "setup"]
    assert [t.key for t in report.sections[-1].tables] == ["versions", "timings"]
    rbo = report.sections[0].tables[0]
    # one perturbation: nothing to compare it with, so nothing is marked; one seed: the
    # interval is over the test queries only, and the caption says so
    assert rbo.rows[0][1].mark is None and rbo.rows[0][1].low is not None
    assert "test queries only" in rbo.caption


def test_to_frame_keeps_numbers_and_marks(data):
    t = T.rls_tables(data)[0]
    df = t.to_frame()
    model = t.columns[1]
    assert df[model].dtype.kind == "f"
    assert set(df[f"{model} mark"]) == {"", "best"}
    assert (df[f"{model} ci_low"] <= df[model]).all() and (df[model] <= df[f"{model} ci_high"]).all()


def test_control_only_store_and_empty_store(tmp_path, make_store):
    from recaudit.audit import AuditStore
    from recaudit.errors import RecauditError
    from recaudit.report import build_report, render_html

    store = make_store(tmp_path / "s.duckdb", models=("gru4rec",), seeds=(0, 1),
                       perturbations=("none",))
    report = build_report(store)
    assert [s.key for s in report.sections] == ["rls", "accuracy", "setup"]
    rbo = report.sections[0].tables[0]
    assert [(r[0].text, r[1].value, r[1].mark) for r in rbo.rows] == [("none", 1.0, None)]
    assert "<svg" not in render_html(report)  # nothing to plot for the control alone
    with AuditStore(tmp_path / "empty.duckdb"):
        pass
    with pytest.raises(RecauditError, match="no finished trials"):
        build_report(tmp_path / "empty.duckdb")


def test_method_tests_pair_queries_and_apply_holm(data, raw_rows):
    from recaudit.stats import holm

    table = T.method_test_table(data)
    model = table.rows[0][1].text
    rows = [r for r in table.rows if r[1].text == model]
    assert {r[2].text for r in rows} == {"casper-delete"}
    assert [r[3].text for r in rows] == ["random-delete", "earliest-random-delete",
                                         "latest-random-delete"]
    q = raw_rows[raw_rows.model_label == model].sort_values(["seed", "query"])
    casper = q[q.perturbation == "casper-delete"].rbo.to_numpy()
    raw = [_paired(casper, q[q.perturbation == r[3].text].rbo.to_numpy(), 1e-3) for r in rows]
    assert [r[8].value for r in rows] == pytest.approx(holm(raw).tolist())
    # CASPER is ~0.1 lower for every query of every seed: significant even at three seeds
    assert all(r[8].significant and "†" in r[8].text for r in rows)
    assert all(r[7].high < 0 for r in rows)  # the difference's interval is below 0


def test_perturbations_are_grouped_by_their_stored_description(tmp_path):
    """Labels carry no grammar: a table written in a config (stored as its canonical JSON)
    and a name are one counted family because their descriptions say so."""
    import numpy as np
    import pandas as pd

    from recaudit.audit import QUERY_METRICS, AuditStore

    labels = {"casper-delete": ("casper-delete", 1), '{"count":3,"name":"casper-delete"}':
              ("casper-delete", 3), "my own idea": ("casper-delete", 5)}
    with AuditStore(tmp_path / "s.duckdb") as st:
        for seed in (0, 1):
            for label, (family, count) in labels.items():
                q = pd.DataFrame({"query": [0, 1], "user": [0, 1], "target": [0, 1],
                                  **{m: np.full(2, 1.0 / count) for m in QUERY_METRICS}})
                st.write_trial({"trial_id": f"{label}-{seed}", "dataset": "d", "model": "m",
                                "model_label": "m", "perturbation": label, "family": family,
                                "edit": "delete", "count": count, "reference": False,
                                "seed": seed, "status": "done"}, q, None)
    data = load(tmp_path / "s.duckdb")
    counts = data.counts().set_index("perturbation")
    assert counts["count"].to_dict() == {label: c for label, (_, c) in labels.items()}
    assert data.main_perturbations() == ["casper-delete"]
    table = T.count_table(data)
    assert [r[3].value for r in table.rows] == [1.0, 3.0, 5.0]
    assert [r[4].value for r in table.rows] == pytest.approx([1.0, 1 / 3, 1 / 5])


def test_a_store_without_descriptions_warns(tmp_path):
    import duckdb

    from recaudit.errors import RecauditWarning

    path = tmp_path / "old.duckdb"
    con = duckdb.connect(str(path))
    con.execute("CREATE TABLE trials (trial_id VARCHAR, dataset VARCHAR, model VARCHAR, "
                "model_label VARCHAR, perturbation VARCHAR, seed BIGINT, n_queries BIGINT, "
                "fit_seconds DOUBLE, total_seconds DOUBLE, status VARCHAR)")
    con.execute("CREATE TABLE query_results AS SELECT 't' AS trial_id, 0::BIGINT AS query, "
                "0::BIGINT AS \"user\", 0::BIGINT AS target, "
                + ", ".join(f"1.0::DOUBLE AS {m}" for m in
                            ("rbo", "rbo_min", "rbo_max", "rbo_trunc", "average_overlap", "frbo",
                             "jaccard", "mrr_base", "mrr_pert", "hit_base", "hit_pert",
                             "ndcg_base", "ndcg_pert")))
    con.execute("INSERT INTO trials VALUES ('t', 'd', 'm', 'm', 'random-delete', 0, 1, 1, 1, "
                "'done')")
    con.close()
    with pytest.warns(RecauditWarning, match="older recaudit"):
        data = load(path)
    assert data.infos["random-delete"].family == "random-delete"


def test_data_table_is_one_row_per_fact_one_column_per_dataset(tmp_path, make_store):
    """The data summary stays narrow however many facts a dataset has (it was cut off on the
    right when each fact was a column)."""
    from recaudit.report import build_report

    store = make_store(tmp_path / "s.duckdb", models=("gru4rec",), seeds=(0,),
                       perturbations=("random-delete",))
    report = build_report(store, figures=False)
    table = next(t for s in report.sections for t in s.tables if t.key == "data")
    assert len(table.columns) == 2  # the fact, then the one dataset
    facts = {row[0].text: row[1].text for row in table.rows}
    assert facts["users"] == "60" and facts["fingerprint"] == "abc123"
    assert {"interactions", "items", "train", "test_queries"} <= set(facts)
