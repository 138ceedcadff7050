"""The §5.1 decoy slate scenario: document set, oracles, data mixing, evaluation, determinism."""

from __future__ import annotations

import math

import numpy as np
import pytest

from recaudit.seeds import make_rng
from recaudit.simulate import (DecoyOracle, GreedySlateOracle, MirrorConfig, TrainConfig,
                               UnbiasedSlateOracle, collect_slates, decoy_documents,
                               decoy_slate_scenario, draw_sessions, evaluate_slates, run_mirror)
from recaudit.simulate.rrm import single_item_preference


def test_document_set_follows_the_sampling_rules():
    docs = decoy_documents(make_rng(0, "t"), n_groups=20)
    f = docs.features.reshape(20, 4, 4)  # group, role, (h, m, role, group)
    first, second = f[:10], f[10:]
    h1, m1 = first[:, 0, 0], first[:, 0, 1]
    assert np.all((h1 >= 0.5) & (h1 <= 1.0)) and np.allclose(m1, 1 - h1)
    assert np.all((first[:, 1, 0] - h1 >= 0) & (first[:, 1, 0] - h1 <= 0.1))
    assert np.all((first[:, 1, 1] - m1 >= 0) & (first[:, 1, 1] - m1 <= 0.1))
    assert np.allclose(first[:, 3, :2], (first[:, 0, :2] + first[:, 2, :2]) / 2)
    np.testing.assert_array_equal(second[:, :, 0], first[:, :, 1])  # swapped halves
    np.testing.assert_array_equal(second[:, :, 1], first[:, :, 0])
    phi = single_item_preference(f[:, :, 0], f[:, :, 1])
    assert np.all(np.argmax(phi, axis=1) == 2)  # d3 is every group's favourite
    assert docs.observable.tolist() == [True, True, False, False]
    with pytest.raises(ValueError, match="even"):
        decoy_documents(make_rng(0), n_groups=3)


def test_oracles_on_the_two_recall_lists():
    scen = decoy_slate_scenario(make_rng(1, "t"), n_groups=4)
    users, queries, cands = draw_sessions(scen, 200, make_rng(2, "t"))
    role = scen.documents.features[:, 2].astype(int)
    dec = DecoyOracle().rank(scen, users, queries, cands, make_rng(3, "t"))
    unb = UnbiasedSlateOracle().rank(scen, users, queries, cands, make_rng(3, "t"))
    seen_d4 = set()
    for c, d, u in zip(cands, dec, unb):
        roles = sorted(role[c].tolist())
        assert roles in ([1, 2, 3], [1, 3, 4])
        assert role[u].tolist() == ([3, 1, 2] if roles == [1, 2, 3] else [3, 4, 1])
        if roles == [1, 2, 3]:
            assert role[d].tolist() == [1, 2, 3]
        else:
            seen_d4.add(tuple(role[d].tolist()))
    assert seen_d4 == {(3, 4, 1), (1, 4, 3)}  # D3 and D4 both used


def test_mixing_uses_the_exact_fraction_and_clicks_follow_probabilities():
    scen = decoy_slate_scenario(make_rng(1, "t"), n_groups=4)
    log = collect_slates(scen, [UnbiasedSlateOracle(), DecoyOracle()], 0.3, 1000, make_rng(5))
    assert log.strategy.sum() == 300
    for u, s, p in zip(log.users[:20], log.slates[:20], log.probs[:20]):
        np.testing.assert_array_equal(p, scen.click_probabilities(u, s))
    # sampled clicks agree with their probabilities (binomial tolerance, 6 sd)
    n, expected = log.clicks.size, log.probs.sum()
    assert abs(log.clicks.sum() - expected) < 6 * math.sqrt(n * 0.25)
    with pytest.raises(ValueError, match="alpha"):
        collect_slates(scen, [UnbiasedSlateOracle(), DecoyOracle()], 1.5, 10, make_rng(5))


def test_evaluation_orders_the_oracles():
    scen = decoy_slate_scenario(make_rng(0, "t"), n_groups=20)
    sessions = draw_sessions(scen, 300, make_rng(1, "t"))
    res = {pol.name: evaluate_slates(scen, pol, sessions, make_rng(2, "t"))
           for pol in (UnbiasedSlateOracle(), DecoyOracle(), GreedySlateOracle())}
    unb, dec, gre = res["Unbiased Oracle"], res["Decoy Oracle"], res["Greedy Oracle"]
    assert unb["mani_score"] == 1.0  # every shown slate is an unbiased ranking
    assert dec["ctr"] > unb["ctr"] and dec["fctr"] < unb["fctr"]
    assert gre["ctr"] >= max(unb["ctr"], dec["ctr"])  # greedy maximises expected clicks
    assert 1.0 < dec["mani_score"] <= math.e ** 2


def _tiny(**kw):
    base = dict(mixes=(0.0, 1.0), seeds=(0,), n_train=120, n_eval=30,
                train=TrainConfig(epochs=2, batch_size=64))
    base.update(kw)
    return MirrorConfig(**base)


def test_seeded_runs_repeat_exactly():
    a = run_mirror(_tiny(algorithms=("DeepFM", "LambdaFM", "SetRank")))
    b = run_mirror(_tiny(algorithms=("DeepFM", "LambdaFM", "SetRank")))
    assert a == b
    c = run_mirror(_tiny(algorithms=("DeepFM",), seeds=(1,)))
    assert [r["value"] for r in c] != [r["value"] for r in a[: len(c)]]
    keys = {(r["algorithm"], r["mix"], r["metric"]) for r in a}
    assert ("SetRank", 1.0, "mani_score") in keys and ("Decoy Oracle", None, "ctr") in keys


def test_config_errors_name_the_key():
    from recaudit.errors import ConfigError

    with pytest.raises(ConfigError, match="scenario"):
        MirrorConfig(scenario="nope")
    with pytest.raises(ConfigError, match="mixes"):
        MirrorConfig(mixes=(0.5, 1.2))
    with pytest.raises(ConfigError, match="algorithms"):
        MirrorConfig(algorithms=("GRU",))
    with pytest.raises(ConfigError, match="manipulative"):
        MirrorConfig(manipulative="planner")


def test_config_round_trips_and_rejects_unknown_keys():
    from recaudit.errors import ConfigError

    cfg = MirrorConfig(scenario="topic-sequential", mixes=(0.0, 0.5), seeds=(3,),
                       algorithms=("GRU-static",), manipulative="ppo", n_train=40,
                       train=TrainConfig(epochs=3, lr=0.01), rbo_p=0.8, ps_k=10)
    d = cfg.to_dict()
    assert MirrorConfig.from_dict(d) == cfg
    import json

    assert MirrorConfig.from_dict(json.loads(json.dumps(d))) == cfg
    with pytest.raises(ConfigError, match="mix_ratio"):
        MirrorConfig.from_dict({**d, "mix_ratio": 0.3})
    with pytest.raises(ConfigError, match="epoch"):
        MirrorConfig.from_dict({**d, "train": {"epoch": 3}})


def test_two_configurations_in_one_store_keep_their_own_rows(tmp_path):
    """Zhu et al. 2023's decoy and greedy figures share a store: the same algorithms, mixes and
    seeds, other training data. Each study reads back exactly the rows it computed (the second
    once replaced the first's, which then read as not measured)."""
    import pandas as pd

    from recaudit.experiment import Store, run_study
    from recaudit.simulate import MirrorStudy, read_results

    store = tmp_path / "mirror.duckdb"
    decoy = MirrorStudy(_tiny(algorithms=("DeepFM",)), store)
    greedy = MirrorStudy(_tiny(algorithms=("DeepFM",), manipulative="greedy"), store)
    run_study(decoy)
    run_study(greedy)
    with Store(store, read_only=True) as s:
        rows = read_results(s)
    for study in (decoy, greedy):
        ids = {t.id for t in study.plan()}
        mine = rows[rows.trial_id.isin(ids)].drop(columns=["trial_id"])
        alone = pd.DataFrame(run_mirror(study.config))
        assert len(mine) == len(alone)
        assert set(mine.algorithm) == set(alone.algorithm) >= {"DeepFM"}
        got = mine.sort_values(["algorithm", "mix", "metric"]).value.to_numpy()
        want = alone.sort_values(["algorithm", "mix", "metric"]).value.to_numpy()
        assert (pd.isna(got) == pd.isna(want)).all()
