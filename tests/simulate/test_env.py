"""Gymnasium environment of the sequential scenario."""

from __future__ import annotations

import numpy as np
import pytest

from recaudit.simulate import TopicConfig

gym = pytest.importorskip("gymnasium")


def _env(**kw):
    from recaudit.simulate.env import TopicSequentialEnv

    return TopicSequentialEnv(**kw)


def test_env_passes_gymnasium_checker():
    from gymnasium.utils.env_checker import check_env

    check_env(_env(), skip_render_check=True)


def test_reset_with_seed_repeats_and_episodes_end():
    env = _env()

    def episode(seed):
        obs, _ = env.reset(seed=seed)
        out = [obs["user"].copy()]
        for _ in range(50):
            obs, r, term, trunc, info = env.step(int(np.argmax(obs["candidates"] @ obs["user"])))
            out.append((r, info["document"], info["click_probability"], info["preference_shift"]))
            if term or trunc:
                return out, term, trunc
        raise AssertionError("the episode never ended")

    a, b = episode(7), episode(7)
    assert a[0][1:] == b[0][1:] and np.array_equal(a[0][0], b[0][0])
    c = episode(8)
    assert not np.array_equal(a[0][0], c[0][0])
    steps = len(a[0]) - 1
    assert steps <= TopicConfig().n_rounds
    assert a[2] == (steps == TopicConfig().n_rounds and not a[1])
    with pytest.raises(ValueError, match="action"):
        env.step(99)
