"""recaudit.audit.summary / compare_perturbations / most_destabilising on stores written by
hand (closed forms against recaudit.stats and scipy), and the ``rerun`` floor on real fits."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats as ss

from recaudit.audit import (AuditConfig, AuditStore, DatasetSpec, ModelSpec, compare_models,
                            compare_perturbations,
                            most_destabilising, run_audit, summary)
from recaudit.stats import estimate_mean, holm, paired_test, welch_test

_ZERO = ("rbo_min", "rbo_max", "rbo_trunc", "average_overlap", "hit_base", "hit_pert",
         "ndcg_base", "ndcg_pert")


def _queries(rbo, mrr_base=None, mrr_pert=None):
    n = len(rbo)
    z = np.zeros(n)
    mrr_base = z + 0.5 if mrr_base is None else mrr_base
    return pd.DataFrame({"query": np.arange(n), "user": np.arange(n), "target": z,
                         "rbo": rbo, "frbo": rbo, "jaccard": rbo, "mrr_base": mrr_base,
                         "mrr_pert": mrr_base if mrr_pert is None else mrr_pert,
                         **{c: z for c in _ZERO}})


def _store(path, trials):
    """``trials``: (perturbation, seed, draw, queries frame)."""
    with AuditStore(path) as st:
        for pert, seed, draw, q in trials:
            st.write_trial({"trial_id": f"{pert}-{seed}-{draw}", "dataset": "d", "model": "m",
                            "model_label": "m", "perturbation": pert, "seed": seed,
                            "draw": draw, "n_queries": len(q), "status": "done"}, q, None)
    return path


def test_summary_is_the_two_level_estimate_of_every_measure(tmp_path):
    rng = np.random.default_rng(0)
    rbo = {s: rng.uniform(0.5, 1.0, 20) for s in range(3)}
    base = rng.uniform(0.1, 0.9, 20)
    pert = {s: np.clip(base - rng.uniform(0, 0.05, 20), 0, 1) for s in range(3)}
    path = _store(tmp_path / "s.duckdb", [("random-delete", s, 0, _queries(rbo[s], base, pert[s]))
                                          for s in range(3)])
    row = summary(path).iloc[0]
    seeds, queries = np.repeat(np.arange(3), 20), np.tile(np.arange(20), 3)
    est = estimate_mean(np.concatenate([rbo[s] for s in range(3)]), seeds, queries)
    assert row.rbo == pytest.approx(est.mean) and row.seeds == 3 and row.queries == 20
    assert (row.rbo_ci_low, row.rbo_ci_high) == pytest.approx(est.interval())
    assert row.levels == "seeds and queries"
    change = estimate_mean(np.concatenate([pert[s] - base for s in range(3)]), seeds, queries)
    assert row.mrr_change == pytest.approx(change.mean) and row.mrr_change < 0
    assert (row.mrr_change_ci_low, row.mrr_change_ci_high) == pytest.approx(change.interval())
    assert "p_vs_seed_only" not in row  # no floor, no column


def test_floors_are_compared_paired_and_holm_adjusted(tmp_path):
    rng = np.random.default_rng(1)
    level = rng.beta(2, 2, 300)  # queries differ far more than the perturbations do
    floor = np.clip(level, 0, 1)
    a = np.clip(level - 0.01 - 0.004 * rng.random(300), 0, 1)  # a little below, every query
    b = np.clip(level + 0.002 * rng.standard_normal(300), 0, 1)  # the floor's level
    path = _store(tmp_path / "f.duckdb", [("seed-only", 0, 0, _queries(floor)),
                                          ("a", 0, 0, _queries(a)), ("b", 0, 0, _queries(b))])
    out = summary(path).set_index("perturbation")
    raw = [paired_test(a, floor).p, paired_test(b, floor).p]
    assert out.loc[["a", "b"], "p_vs_seed_only"].tolist() == pytest.approx(holm(raw).tolist())
    assert out.loc["a", "p_vs_seed_only"] < 1e-10  # paired: every query moved
    assert welch_test(a, floor).p > 0.05  # unpaired, the same numbers say nothing
    assert raw[0] > 0 and out.loc["a", "p_vs_seed_only"] == pytest.approx(2 * raw[0])  # Holm
    assert np.isnan(out.loc["seed-only", "p_vs_seed_only"])
    assert out.loc["a", "levels"] == "queries only"


def test_draws_are_averaged_within_the_seed_against_a_floor(tmp_path):
    rng = np.random.default_rng(2)
    trials = []
    for s in range(2):
        trials.append(("seed-only", s, 0, _queries(rng.uniform(0.5, 0.7, 30))))
        for d in range(3):
            trials.append(("random-delete", s, d, _queries(rng.uniform(0.8, 1.0, 30))))
    path = _store(tmp_path / "d.duckdb", trials)
    q = {(p, s, d): t.rbo.to_numpy() for p, s, d, t in trials}
    pert = np.concatenate([np.mean([q[("random-delete", s, d)] for d in range(3)], axis=0)
                           for s in range(2)])
    floor = np.concatenate([q[("seed-only", s, 0)] for s in range(2)])
    expect = paired_test(pert, floor, np.repeat([0, 1], 30), np.tile(np.arange(30), 2)).p
    row = summary(path).set_index("perturbation").loc["random-delete"]
    assert row.p_vs_seed_only == pytest.approx(expect)
    assert row.seeds == 2 and row.draws == 3


def test_compare_within_and_between_perturbations(tmp_path):
    rng = np.random.default_rng(3)
    base = rng.uniform(0.2, 0.8, 200)
    pert = np.clip(base - 0.02 + 0.01 * rng.standard_normal(200), 0, 1)
    path = _store(tmp_path / "c.duckdb", [
        ("remove-end-10", 0, 0, _queries(rng.uniform(0.4, 0.6, 200), base, pert)),
        ("remove-beginning-10", 0, 0, _queries(rng.uniform(0.6, 0.8, 200), base, base))])
    within = compare_perturbations(path, "remove-end-10", "remove-end-10", metric="mrr_pert",
                                   metric_b="mrr_base").iloc[0]
    assert within.p == pytest.approx(ss.ttest_rel(pert, base).pvalue) and within.test == "paired-t"
    assert within.difference == pytest.approx((pert - base).mean())
    assert within.ci_low < within.difference < within.ci_high < 0
    between = compare_perturbations(path, "remove-end-10", "remove-beginning-10").iloc[0]
    assert between.mean_a < between.mean_b and between.p < 1e-10
    assert compare_perturbations(path, "remove-end-10", "nope").empty


def test_most_destabilising_only_when_the_data_decide(tmp_path):
    rng = np.random.default_rng(4)
    level = rng.uniform(0.3, 0.9, 400)
    trials = [("casper-delete", 0, 0, _queries(level - 0.05 + 0.01 * rng.standard_normal(400))),
              ("random-delete", 0, 0, _queries(level + 0.01 * rng.standard_normal(400))),
              ("earliest-random-delete", 0, 0,
               _queries(level + 0.01 * rng.standard_normal(400))),
              ("seed-only", 0, 0, _queries(level - 0.3))]  # a floor is never a candidate
    decided = most_destabilising(_store(tmp_path / "m.duckdb", trials)).iloc[0]
    assert decided.lowest == "casper-delete" and decided.decided and decided.compared == 2
    # two perturbations at the same level: the lower one is not "the most destabilising"
    tied = [("a", 0, 0, _queries(level + 0.02 * rng.standard_normal(400))),
            ("b", 0, 0, _queries(level + 0.02 * rng.standard_normal(400)))]
    out = most_destabilising(_store(tmp_path / "t.duckdb", tied)).iloc[0]
    assert not out.decided and {out.lowest, out.runner_up} == {"a", "b"} and out.p > 0.05


SCRIPT = Path(__file__).parents[1] / "models" / "fake_command_model.py"
PY = shlex.quote(sys.executable)


def _command(mode: str) -> ModelSpec:
    train = f"{PY} {shlex.quote(str(SCRIPT))} train {{train}} {{seed}} {{model_dir}} {{params}}"
    rank = f"{PY} {shlex.quote(str(SCRIPT))} rank {{model_dir}} {{queries}} {{k}} {{output}}"
    return ModelSpec("command", {"train": f"{train} {mode}".strip(), "rank": rank})


@pytest.mark.parametrize("mode, reproducible", [("", True), ("unseeded", False)])
def test_rerun_floor_measures_nondeterminism(tmp_path, mode, reproducible):
    cfg = AuditConfig(
        datasets=(DatasetSpec("synthetic", options={"n_users": 40, "n_items": 30,
                                                    "mean_length": 10, "seed": 1}),),
        models=(_command(mode),), perturbations=("rerun", "random-delete"), seeds=(0, 1),
        output=str(tmp_path / f"r{mode}.duckdb"))
    out = summary(run_audit(cfg)).set_index("perturbation")
    rerun = out.loc["rerun"]
    if reproducible:  # same data, same seed: the same lists
        assert rerun.rbo == 1.0 and rerun.rbo_ci_low == rerun.rbo_ci_high == 1.0
        assert rerun.identical == 1.0
    else:  # an unseeded program: refitting alone changes the lists
        assert rerun.rbo < 0.99 and rerun.rbo_ci_low < rerun.rbo and rerun.identical < 0.5
    assert 0 <= out.loc["random-delete", "p_vs_rerun"] <= 1


def test_variance_shares_read_every_perturbation_of_the_store(tmp_path):
    from recaudit.audit import variance_shares
    from recaudit.stats import variance_parts

    rng = np.random.default_rng(4)
    trials, values = [], {}
    users = 0.05 * rng.standard_normal(30)  # some users' lists move more than others'
    for pert, sd_seed in (("random-delete", 0.0), ("seed-only", 0.1)):
        offsets = sd_seed * rng.standard_normal(8)
        for s in range(8):
            v = np.clip(0.5 + offsets[s] + users + 0.02 * rng.standard_normal(30), 0, 1)
            values[(pert, s)] = v
            trials.append((pert, s, 0, _queries(v)))
    shares = variance_shares(_store(tmp_path / "v.duckdb", trials)).set_index("perturbation")
    for pert in ("random-delete", "seed-only"):
        y = np.concatenate([values[(pert, s)] for s in range(8)])
        v = variance_parts(y, np.repeat(np.arange(8), 30), None, np.tile(np.arange(30), 8))
        assert shares.loc[pert, "var_seed"] == pytest.approx(v.seed)
        assert shares.loc[pert, "share_query"] == pytest.approx(v.shares()["query"])
        assert (shares.loc[pert, ["seeds", "draws", "queries"]] == [8, 1, 30]).all()
    # the seed moves seed-only's lists, not the deletion's
    assert shares.loc["seed-only", "mean_share_seed"] > 0.9
    assert shares.loc["random-delete", "mean_share_seed"] < 0.5


def test_results_variance_prints_the_shares(tmp_path, capsys):
    import io

    from recaudit.audit import variance_shares
    from recaudit.cli import main

    rng = np.random.default_rng(5)
    path = _store(tmp_path / "w.duckdb", [(p, s, 0, _queries(rng.uniform(0.4, 0.6, 20)))
                                           for p in ("random-delete", "seed-only")
                                           for s in range(3)])
    assert main(["results", str(path), "--variance", "--format", "csv"]) == 0
    printed = pd.read_csv(io.StringIO(capsys.readouterr().out))
    expected = variance_shares(path)
    assert list(printed.perturbation) == list(expected.perturbation)
    np.testing.assert_allclose(printed.share_seed, expected.share_seed)
    assert main(["results", str(path), "--variance"]) == 0
    assert "Where the RBO's variation comes from" in capsys.readouterr().out


def _two_models(path, values):
    """``values``: (model, perturbation, seed, per-query RBO) -> a store of one dataset."""
    with AuditStore(path) as st:
        for model, pert, seed, rbo in values:
            st.write_trial({"trial_id": f"{model}-{pert}-{seed}", "dataset": "d",
                            "model": model, "model_label": model, "perturbation": pert,
                            "seed": seed, "draw": 0, "n_queries": len(rbo), "status": "done"},
                           _queries(rbo), None)
    return path


def test_compare_models_pairs_two_models_per_seed_and_query(tmp_path):
    """Issue 47, item 2: which model is more stable, paired per (seed, query); the difference,
    interval and p are the two-level paired test's on those pairs, Holm over the dataset."""
    rng = np.random.default_rng(3)
    seeds, q = range(3), 40
    a = {(p, s): rng.uniform(0.90, 1.0, q) for p in ("random-delete", "seed-only") for s in seeds}
    b = {k: np.clip(v - rng.uniform(0.0, 0.1, q), 0, 1) for k, v in a.items()}
    values = [(m, p, s, vals[(p, s)]) for m, vals in (("m1", a), ("m2", b))
              for p, s in vals] + [("m1", "rerun", s, np.ones(q)) for s in seeds] \
        + [("m2", "rerun", s, np.ones(q)) for s in seeds]
    path = _two_models(tmp_path / "m.duckdb", values)
    out = compare_models(path)
    assert list(out.perturbation) == ["random-delete", "seed-only"]  # no rerun by default
    reps, units = np.repeat(np.arange(3), q), np.tile(np.arange(q), 3)
    ps = []
    for r in out.itertuples():
        x = np.concatenate([a[(r.perturbation, s)] for s in seeds])
        y = np.concatenate([b[(r.perturbation, s)] for s in seeds])
        t = paired_test(x, y, reps, units)
        assert (r.a, r.b, r.seeds, r.pairs) == ("m1", "m2", 3, 3 * q)
        assert r.mean_a == pytest.approx(x.mean()) and r.mean_b == pytest.approx(y.mean())
        assert r.difference == pytest.approx(x.mean() - y.mean())
        assert (r.ci_low, r.ci_high) == pytest.approx(t.interval())
        assert r.p == pytest.approx(t.p) and r.levels == "seeds and queries"
        ps.append(t.p)
    assert list(out.p_holm) == pytest.approx(list(holm(ps)))
    assert list(out.more_stable) == ["m1", "m1"]  # m2 is m1 moved down on every query
    assert list(compare_models(path, perturbations=["rerun"]).test) == ["constant"]
    swapped = compare_models(path, "m2", "m1")
    assert list(swapped.difference) == pytest.approx(list(-out.difference))
    assert list(swapped.more_stable) == ["m1", "m1"]
    with pytest.raises(ValueError, match="similarity"):
        compare_models(path, metric="mrr_change")


def test_compare_models_counts_the_seed_to_seed_variation(tmp_path):
    """A difference the seeds disagree on (+, +, - by seed, the same on every query of a seed)
    is no decision: the per-query protocol alone would call it one."""
    rng = np.random.default_rng(4)
    q = 50
    base = {s: rng.uniform(0.6, 0.9, q) for s in range(3)}
    shift = {0: 0.03, 1: 0.02, 2: -0.04}
    values = [("m1", "random-delete", s, base[s] + shift[s] + rng.normal(0, 1e-3, q))
              for s in range(3)] + [("m2", "random-delete", s, base[s]) for s in range(3)]
    path = _two_models(tmp_path / "v.duckdb", values)
    (row,) = compare_models(path).itertuples()
    x = np.mean([v for m, _, _, v in values if m == "m1"], axis=0)  # per query, over seeds
    y = np.mean([v for m, _, _, v in values if m == "m2"], axis=0)
    assert paired_test(x, y).p < 1e-6  # the queries alone: "decided"
    assert row.p > 0.05 and row.more_stable == ""  # with the seeds: not told apart


def test_compare_models_uses_the_seeds_both_ran(tmp_path):
    rng = np.random.default_rng(5)
    q = 20
    values = [("m1", "seed-only", s, rng.uniform(0, 1, q)) for s in range(3)] \
        + [("m2", "seed-only", s, rng.uniform(0, 1, q)) for s in (1, 2, 7)]
    (row,) = compare_models(_two_models(tmp_path / "s.duckdb", values)).itertuples()
    assert (row.seeds, row.pairs) == (2, 2 * q)
    x = np.concatenate([values[s][3] for s in (1, 2)])
    y = np.concatenate([values[3 + i][3] for i in (0, 1)])
    assert row.difference == pytest.approx(x.mean() - y.mean())


def test_a_floor_whose_seed_changes_which_queries_agree_reads_as_seed_by_query(tmp_path,
                                                                                capsys):
    """Issue 60, item 7: a seed-only floor read "seed 0 % / 0 %, rest 100 % / 100 %", which
    looked as if the seed did not move it. The numbers are right — checked here against the
    balanced two-way ANOVA written out by hand — and the table now says what each share is
    of: a floor whose every query's RBO is drawn afresh per seed is all seed × query."""
    from recaudit.audit import variance_shares
    from recaudit.cli import main

    rng = np.random.default_rng(7)
    S, Q = 4, 50
    x = rng.uniform(0.0, 0.3, (S, Q))              # each (seed, query) afresh: interaction
    y = 0.97 + 0.01 * rng.standard_normal((S, Q)) + 0.02 * rng.standard_normal(Q)
    trials = [(p, s, 0, _queries(v[s])) for p, v in (("seed-only", x), ("random-delete", y))
              for s in range(S)]
    path = _store(tmp_path / "f.duckdb", trials)
    got = variance_shares(path).set_index("perturbation")
    for pert, v in (("seed-only", x), ("random-delete", y)):
        g, ms, mq = v.mean(), v.mean(axis=1), v.mean(axis=0)
        ms_seed = Q * ((ms - g) ** 2).sum() / (S - 1)
        ms_query = S * ((mq - g) ** 2).sum() / (Q - 1)
        ms_res = ((v - ms[:, None] - mq[None, :] + g) ** 2).sum() / ((S - 1) * (Q - 1))
        seed, query = max(0.0, (ms_seed - ms_res) / Q), max(0.0, (ms_query - ms_res) / S)
        assert got.loc[pert, "var_seed"] == pytest.approx(seed, abs=1e-12)
        assert got.loc[pert, "var_query"] == pytest.approx(query, abs=1e-12)
        assert got.loc[pert, "var_residual"] == pytest.approx(ms_res)
        mean = {"seed": seed / S, "query": query / Q, "residual": ms_res / (S * Q)}
        assert got.loc[pert, "mean_share_residual"] == pytest.approx(
            mean["residual"] / sum(mean.values()))
    assert got.loc["seed-only", "share_residual"] > 0.9    # all seed x query
    assert got.loc["random-delete", "share_query"] > 0.5   # some queries move more
    assert main(["results", str(path), "--variance"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "seed × query" in text and "rest" not in text
    assert "share of the variance of one per-query RBO (one query in one trial)" in text
    assert "share of the variance of the mean RBO the tables report" in text


def test_a_model_difference_interval_is_clipped_to_minus_one_one(tmp_path):
    # two models whose RBOs differ by nearly 1, with seeds that disagree: the paired
    # interval's normal reach passes 1, which a difference of two values in [0, 1] cannot
    from recaudit.audit import compare_models

    rng = np.random.default_rng(8)
    q = 30
    values = []
    for s, off in enumerate((0.0, 0.08, 0.16)):
        values.append(("m1", "random-delete", s, np.clip(0.92 + off + 0.001 *
                                                          rng.standard_normal(q), 0, 1)))
        values.append(("m2", "random-delete", s, np.full(q, 0.0)))
    row = compare_models(_two_models(tmp_path / "c.duckdb", values)).iloc[0]
    assert row.difference > 0.9 and row.ci_high == 1.0 and row.ci_low < row.difference
