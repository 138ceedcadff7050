"""The §5.3 topic / quality / time-budget scenario: dynamics, oracles, Preference Shift."""

from __future__ import annotations

import numpy as np
import pytest

from recaudit.seeds import make_rng
from recaudit.simulate import (MirrorConfig, PlannerOracle, TopicConfig, TopicUsers, TopicWorld,
                               TrainConfig, UnbiasedTopicOracle, run_mirror, simulate_sessions)


def test_world_follows_the_configuration():
    cfg = TopicConfig()
    w = TopicWorld.sample(cfg, make_rng(0, "t"))
    assert w.topic.shape == (100,) and np.bincount(w.topic).tolist() == [10] * 10
    np.testing.assert_allclose(np.sort(w.topic_mean), np.linspace(-1, 1, 10))
    resid = w.quality - w.topic_mean[w.topic]
    assert abs(resid.std() - cfg.quality_sd) < 0.03 and abs(resid.mean()) < 0.03
    with pytest.raises(ValueError, match="n_recall"):
        TopicConfig(n_recall=101)


def test_one_step_of_the_dynamics():
    cfg = TopicConfig(budget=2.0, learning_rate=0.1)
    w = TopicWorld.sample(cfg, make_rng(0, "t"))
    u0 = np.full((2, 10), 0.5)
    u0[0, :] = 1.0  # user 0 always clicks
    u0[1, :] = 0.0  # user 1 never does
    users = TopicUsers.start(w, u0, make_rng(1, "t"))
    doc = np.array([3, 3])
    t, q = w.topic[3], w.quality[3]
    p, clicks = users.step(w, doc, make_rng(2, "t"))
    np.testing.assert_array_equal(p, [1.0, 0.0])
    np.testing.assert_array_equal(clicks, [True, False])
    cost = max(cfg.click_cost - cfg.quality_cost * q, cfg.min_cost)
    np.testing.assert_allclose(users.budget, [2.0 - cost, 2.0 - cfg.skip_cost])
    assert users.u[0, t] == pytest.approx(np.clip(1.0 + 0.1 * q, 0, 1))
    assert users.u[1, t] == 0.0
    assert users.history[0][-1] == 3 and len(users.history[1]) == cfg.initial_history


def test_users_leave_when_the_budget_is_spent():
    cfg = TopicConfig(budget=1.2, skip_cost=0.5)
    w = TopicWorld.sample(cfg, make_rng(0, "t"))
    res = simulate_sessions(w, np.zeros((3, 10)), UnbiasedTopicOracle(), make_rng(1, "t"))
    # never clicks: 0.5 per round -> active for rounds 1..3 only
    np.testing.assert_array_equal(res.active[:, 0], [True] * 3 + [False] * 17)
    assert res.summary()["ctr"] == 0.0


def test_preference_shift_is_zero_when_preferences_do_not_move():
    cfg = TopicConfig(learning_rate=0.0)
    w = TopicWorld.sample(cfg, make_rng(0, "t"))
    u0 = make_rng(1, "t").uniform(0, 1, (40, 10))
    for pol in (UnbiasedTopicOracle(), PlannerOracle()):
        res = simulate_sessions(w, u0, pol, make_rng(2, "t"))
        assert np.all(res.shift == 0.0)
    moving = simulate_sessions(TopicWorld.sample(TopicConfig(), make_rng(0, "t")), u0,
                               PlannerOracle(), make_rng(2, "t"))
    assert moving.shift[-1].mean() > 0.0 and np.all((moving.shift >= 0) & (moving.shift <= 1))


def test_unbiased_oracle_shows_the_best_initial_topic_and_favourites_are_its_documents():
    w = TopicWorld.sample(TopicConfig(), make_rng(0, "t"))
    u0 = make_rng(3, "t").uniform(0, 1, (50, 10))
    res = simulate_sessions(w, u0, UnbiasedTopicOracle(), make_rng(4, "t"))
    fav_topic = u0.argmax(axis=1)
    np.testing.assert_array_equal(res.favourite, w.topic[res.shown] == fav_topic[None, :])


def test_planner_trades_short_term_clicks_for_longer_sessions():
    """The paper's Table 3 pattern: Planner has higher CTR, lower FCTR and higher PS."""
    w = TopicWorld.sample(TopicConfig(), make_rng(0, "t"))
    u0 = make_rng(1, "t").uniform(0, 1, (300, 10))
    unb = simulate_sessions(w, u0, UnbiasedTopicOracle(), make_rng(2, "t"))
    pla = simulate_sessions(w, u0, PlannerOracle(), make_rng(2, "t"))
    su, sp = unb.summary(), pla.summary()
    assert sp["ctr"] > su["ctr"] and sp["fctr"] < su["fctr"] and sp["ps"] > su["ps"]
    assert pla.active.sum() > unb.active.sum()  # users stay longer


def test_sequential_runner_repeats_exactly():
    cfg = MirrorConfig(scenario="topic-sequential", mixes=(0.5,), seeds=(0,), n_train=20,
                       n_eval=20, algorithms=("DNN", "GRU", "GRU-static"),
                       train=TrainConfig(epochs=1))
    a, b = run_mirror(cfg), run_mirror(cfg)
    assert a == b
    metrics = {(r["algorithm"], r["metric"], r["round"] is None) for r in a}
    assert ("GRU-static", "ps", True) in metrics and ("Planner Oracle", "ctr", False) in metrics
    assert sum(r["metric"] == "ctr" and r["round"] is not None and r["algorithm"] == "DNN"
               for r in a) == 20
