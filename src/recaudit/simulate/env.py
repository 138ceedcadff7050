"""The topic-sequential MIRROR scenario (Zhu et al. 2023, §5.3) as a Gymnasium environment.

``TopicSequentialEnv(config=TopicConfig(), world_seed=0)`` fixes the document set (topics and hidden
qualities) from ``world_seed``; every ``reset(seed=...)`` draws a new user (profile, initial
history) from the environment's ``np_random``, and every draw of the episode (recall, clicks) comes from the
same generator, so ``reset(seed=s)`` followed by the same actions repeats exactly.

* observation (``Dict``): ``"user"`` -- the observable profile ``u^0`` (``[m]``, in ``[0, 1]``);
  ``"candidates"`` -- one-hot topics of the recalled documents (``[n_recall, m]``);
  ``"history"`` -- clicks per topic so far, initial history included (``[m]``);
  ``"round"`` -- rounds played, ``[1]``.
* action (``Discrete(n_recall)``): which recalled document to show.
* reward: 1.0 for a click, else 0.0.
* ``terminated`` when the user's time budget is spent; ``truncated`` after ``n_rounds`` rounds.
* ``info``: ``click_probability``, ``document`` (id shown), ``candidates`` (ids) and
  ``preference_shift`` (Def. 4.6 after the step, ``rbo_p``/``rbo_variant``, all documents).

Gymnasium is an optional dependency (``pip install recaudit[simulate]``); it is imported when this
module is.
"""

from __future__ import annotations

import numpy as np

try:
    import gymnasium as gym
    from gymnasium import spaces
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise ImportError("recaudit.simulate.env needs gymnasium: pip install 'recaudit[simulate]'") \
        from exc

from recaudit.seeds import make_rng
from recaudit.metrics import RBOVariant
from recaudit.simulate import _measures as _m
from recaudit.simulate._topic import TopicConfig, TopicUsers, TopicWorld, recall

__all__ = ["TopicSequentialEnv"]


class TopicSequentialEnv(gym.Env):
    """Gymnasium environment of the §5.3 scenario (see the module docstring)."""

    metadata: dict[str, list[str]] = {"render_modes": []}

    def __init__(self, config: TopicConfig | None = None, world_seed: int = 0,
                 rbo_p: float = 0.9, rbo_variant: RBOVariant = "ext") -> None:
        self.config = config or TopicConfig()
        self.world = TopicWorld.sample(self.config, make_rng(world_seed, "mirror", "env-world"))
        self.rbo_p, self.rbo_variant = rbo_p, rbo_variant
        c = self.config
        self.observation_space = spaces.Dict({
            "user": spaces.Box(0.0, 1.0, (c.n_topics,), dtype=np.float32),
            "candidates": spaces.Box(0.0, 1.0, (c.n_recall, c.n_topics), dtype=np.float32),
            "history": spaces.Box(0.0, float(c.initial_history + c.n_rounds), (c.n_topics,),
                                  dtype=np.float32),
            "round": spaces.Box(0.0, float(c.n_rounds), (1,), dtype=np.float32),
        })
        self.action_space = spaces.Discrete(c.n_recall)
        self._users: TopicUsers | None = None

    def _obs(self):
        c = self.config
        users = self._users
        if users is None:
            raise RuntimeError("call reset() before step(): the environment has no user yet")
        hist = np.bincount(self.world.topic[np.asarray(users.history[0], dtype=np.int64)],
                           minlength=c.n_topics)
        return {"user": users.u0[0].astype(np.float32),
                "candidates": self.world.one_hot(self._cands).astype(np.float32),
                "history": hist.astype(np.float32),
                "round": np.array([users.round], dtype=np.float32)}

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        rng = self.np_random
        u0 = rng.uniform(0.0, 1.0, size=(1, self.config.n_topics))
        self._users = TopicUsers.start(self.world, u0, rng)
        self._l0 = _m.preference_list(u0[0][self.world.topic])
        self._cands = recall(self.world, 1, rng)[0]
        return self._obs(), {"candidates": self._cands.copy()}

    def step(self, action):
        if self._users is None:
            raise RuntimeError("call reset() before step()")
        if not self.action_space.contains(action):
            raise ValueError(f"action must be an int in [0, {self.config.n_recall}); "
                             f"got {action!r}")
        doc = int(self._cands[int(action)])
        p, clicks = self._users.step(self.world, np.array([doc]), self.np_random)
        cur = _m.preference_list(self._users.u[0][self.world.topic])
        shift = 0.0 if np.array_equal(cur, self._l0) else _m.preference_shift(
            self._l0.tolist(), cur.tolist(), self.rbo_p, variant=self.rbo_variant)
        terminated = not bool(self._users.active[0])
        truncated = self._users.round >= self.config.n_rounds and not terminated
        self._cands = recall(self.world, 1, self.np_random)[0]
        info = {"click_probability": float(p[0]), "document": doc,
                "candidates": self._cands.copy(), "preference_shift": shift}
        return self._obs(), float(clicks[0]), terminated, truncated, info
