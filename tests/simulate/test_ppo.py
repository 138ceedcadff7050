"""PPO oracles: sequential (topic scenario) and slate-building."""

from __future__ import annotations

import numpy as np
import pytest

from recaudit.seeds import make_rng
from recaudit.simulate import (PPOOracle, TopicConfig, TopicWorld, UnbiasedTopicOracle,
                               simulate_sessions)


def test_ppo_learns_and_repeats():
    from recaudit.simulate._ppo import PPOConfig

    w = TopicWorld.sample(TopicConfig(), make_rng(0, "t"))
    cfg = PPOConfig(iterations=12, batch_users=32)
    a = PPOOracle(seed=1, config=cfg).train(w)
    b = PPOOracle(seed=1, config=cfg).train(w)
    assert a.returns_ == b.returns_
    assert np.mean(a.returns_[-3:]) > np.mean(a.returns_[:3])  # clicks per session go up
    u0 = make_rng(2, "t").uniform(0, 1, (100, 10))
    ra = simulate_sessions(w, u0, a, make_rng(3, "t"))
    rb = simulate_sessions(w, u0, b, make_rng(3, "t"))
    np.testing.assert_array_equal(ra.shown, rb.shown)
    with pytest.raises(RuntimeError, match="train"):
        PPOOracle().select(w, None, np.zeros((1, 10), dtype=int), None)


def test_ppo_oracle_in_the_runner_beats_unbiased_ctr():
    from recaudit.simulate._ppo import PPOConfig

    w = TopicWorld.sample(TopicConfig(), make_rng(0, "t"))
    ppo = PPOOracle(seed=0, config=PPOConfig(iterations=25, batch_users=48)).train(w)
    u0 = make_rng(2, "t").uniform(0, 1, (200, 10))
    s_ppo = simulate_sessions(w, u0, ppo, make_rng(3, "t")).summary()
    s_unb = simulate_sessions(w, u0, UnbiasedTopicOracle(), make_rng(3, "t")).summary()
    assert s_ppo["ctr"] > s_unb["ctr"]


@pytest.mark.slow
def test_slate_ppo_approaches_the_greedy_oracle():
    from recaudit.simulate import (DecoyOracle, GreedySlateOracle, SlatePPOOracle,
                                   UnbiasedSlateOracle, decoy_slate_scenario, draw_sessions,
                                   evaluate_slates)
    from recaudit.simulate._ppo import PPOConfig

    scen = decoy_slate_scenario(make_rng(0, "s"), n_groups=20)
    cfg = PPOConfig(iterations=40, batch_users=128, expected_reward=True)
    ppo = SlatePPOOracle(seed=0, config=cfg).train(scen)
    ses = draw_sessions(scen, 300, make_rng(1))
    res = {p.name: evaluate_slates(scen, p, ses, make_rng(2))["ctr"]
           for p in (UnbiasedSlateOracle(), GreedySlateOracle(), ppo)}
    gap = res["Greedy Oracle"] - res["Unbiased Oracle"]
    assert gap > 0
    assert res["PPO Oracle"] > res["Unbiased Oracle"] + 0.5 * gap  # most of the way to greedy
    slates = ppo.rank(scen, *ses, make_rng(3))
    assert all(len(set(s)) == 3 and set(s) <= set(c) for s, c in zip(slates, ses[2]))
    assert DecoyOracle().name != ppo.name


def test_slate_ppo_repeats_under_a_seed():
    from recaudit.simulate import SlatePPOOracle, decoy_slate_scenario, draw_sessions
    from recaudit.simulate._ppo import PPOConfig

    scen = decoy_slate_scenario(make_rng(0, "s"), n_groups=4)
    cfg = PPOConfig(iterations=3, batch_users=32)
    a = SlatePPOOracle(seed=5, config=cfg).train(scen)
    b = SlatePPOOracle(seed=5, config=cfg).train(scen)
    assert a.returns_ == b.returns_
    ses = draw_sessions(scen, 50, make_rng(1))
    np.testing.assert_array_equal(a.rank(scen, *ses, None), b.rank(scen, *ses, None))
    with pytest.raises(RuntimeError, match="train"):
        SlatePPOOracle().rank(scen, *ses, None)
