"""Sequential sessions in the topic scenario and their metrics (Zhu et al. 2023, §4.2 and §5.3).

:func:`simulate_sessions` runs users through ``n_rounds`` rounds with a policy and returns the
per-round expected clicks, favourite flags, Preference Shift and the logged interactions.
Per-round CTR counts users who have left as no clicks (the paper's Fig. 10); CTR is the mean of
the per-round CTRs; FCTR is ``sum p 1(d in F) / sum p`` over all shown documents; PS is the mean
over users of ``1 - RBO(L_0, L_r)`` after round ``r`` (Def. 4.6), where ``L_r`` lists the top
``ps_k`` documents (default: all) by ``u^r_{t(d)}`` (ties by document id, so a list changes only
when the order of topics does).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from recaudit.seeds import derive_seed, make_rng
from recaudit.metrics import RBOVariant
from recaudit.simulate import _measures as _m
from recaudit.simulate._results import result_row
from recaudit.simulate._topic import (PlannerOracle, TopicConfig, TopicUsers, TopicWorld,
                                      UnbiasedTopicOracle, recall)

__all__ = ["SessionResult", "simulate_sessions", "ModelTopicPolicy", "run_sequential"]


@dataclass
class SessionResult:
    """Outcome of one batch of sessions (arrays are ``[n_rounds, n_users]``)."""

    probs: np.ndarray
    clicks: np.ndarray
    active: np.ndarray
    favourite: np.ndarray
    shift: np.ndarray
    shown: np.ndarray
    seen_history: list  # per round, per user: the history the policy could see (ids)
    initial_history: list

    def ctr_by_round(self) -> np.ndarray:
        return (self.probs * self.active).mean(axis=1)

    def summary(self) -> dict:
        p = self.probs * self.active
        tot = p.sum()
        return {"ctr": float(self.ctr_by_round().mean()),
                "fctr": float((p * self.favourite).sum() / tot) if tot > 0 else float("nan"),
                "ps": float(self.shift[-1].mean())}


class _Shift:
    """Preference Shift of users from their preference vectors (batched RBO)."""

    def __init__(self, world: TopicWorld, u0: np.ndarray, p: float, variant: RBOVariant,
                 k: int | None) -> None:
        self.world, self.p, self.variant = world, p, variant
        self.k = world.config.n_docs if k is None else k
        self.l0 = self.lists(u0)

    def lists(self, u: np.ndarray) -> np.ndarray:
        scores = u[:, self.world.topic]  # [n, n_docs]; ties by document id (stable)
        return np.argsort(-scores, axis=1, kind="stable")[:, : self.k]

    def __call__(self, u: np.ndarray) -> np.ndarray:
        cur = self.lists(u)
        out = np.zeros(len(u))
        moved = np.flatnonzero((cur != self.l0).any(axis=1))
        if moved.size:
            out[moved] = _m.preference_shift_batch(self.l0[moved], cur[moved], self.p,
                                                   variant=self.variant)
        return out


def simulate_sessions(world: TopicWorld, u0: np.ndarray, policy, rng: np.random.Generator, *,
                      rbo_p: float = 0.9, rbo_variant: RBOVariant = "ext",
                      ps_k: int | None = None, dynamic_history: bool = True) -> SessionResult:
    """Run one session for every user profile in ``u0`` with ``policy`` (stages 2/3)."""
    c = world.config
    users = TopicUsers.start(world, np.asarray(u0, dtype=np.float64), rng)
    initial = [list(h) for h in users.history]
    n = len(u0)
    fav_docs = np.zeros((n, c.n_docs), dtype=bool)
    for i in range(n):
        fav_docs[i, _m.favourite_set(u0[i][world.topic], c.k_favourite)] = True
    shift = _Shift(world, users.u0, rbo_p, rbo_variant, ps_k)
    shape = (c.n_rounds, n)
    out = SessionResult(np.zeros(shape), np.zeros(shape), np.zeros(shape, dtype=bool),
                        np.zeros(shape, dtype=bool), np.zeros(shape),
                        np.zeros(shape, dtype=np.int64), [], initial)
    for r in range(c.n_rounds):
        cands = recall(world, n, rng)
        seen = [list(h) for h in users.history] if dynamic_history else initial
        docs = np.asarray(policy.select(world, users, cands, rng), dtype=np.int64)
        out.active[r] = users.active
        p, clicks = users.step(world, docs, rng)
        out.probs[r], out.clicks[r], out.shown[r] = p, clicks, docs
        out.favourite[r] = fav_docs[np.arange(n), docs]
        out.seen_history.append(seen)
        out.shift[r] = shift(users.u)
    return out


class EpsilonPolicy:
    """Shows a uniformly random candidate with probability ``epsilon``, else ``policy``'s choice
    (exploration of a logging policy; ``epsilon = 0`` is the policy itself)."""

    def __init__(self, policy, epsilon: float) -> None:
        if not 0.0 <= epsilon <= 1.0:
            raise ValueError(f"epsilon must lie in [0, 1]; got {epsilon}")
        self.policy, self.epsilon, self.name = policy, epsilon, policy.name

    def select(self, world, users, cands, rng):
        chosen = np.asarray(self.policy.select(world, users, cands, rng))
        explore = rng.random(len(cands)) < self.epsilon
        rand = cands[np.arange(len(cands)), rng.integers(0, cands.shape[1], len(cands))]
        return np.where(explore, rand, chosen)


class ModelTopicPolicy:
    """Shows the candidate with the highest predicted click logit of a trained DNN/GRU."""

    def __init__(self, model, name: str) -> None:
        self.model, self.name = model, name

    def select(self, world, users: TopicUsers, cands, rng):
        hist = users.history if getattr(self.model, "dynamic", True) else \
            [h[: users.n_initial] for h in users.history]
        s = self.model.score(users.u0, world.one_hot(cands), hist)
        return cands[np.arange(len(cands)), np.argmax(s, axis=1)]


def _model(name: str, cfg):
    from recaudit.simulate._seq_models import DNN, GRU

    if name == "DNN":
        return DNN(cfg.train)
    if name == "GRU":
        return GRU(cfg.train, dynamic=True)
    return GRU(cfg.train, dynamic=False)  # "GRU-static"


def _training_rows(world, res: SessionResult, u0: np.ndarray, rows: np.ndarray, static: bool):
    xs, ds, hs, ys = [], [], [], []
    for r in range(res.probs.shape[0]):
        for i in rows:
            if not res.active[r, i]:
                continue
            xs.append(u0[i])
            ds.append(res.shown[r, i])
            hs.append(res.initial_history[i] if static else res.seen_history[r][i])
            ys.append(float(res.clicks[r, i]))
    return np.asarray(xs), world.one_hot(np.asarray(ds, dtype=np.int64)), hs, np.asarray(ys)


def _manipulative(name: str, world, seed):
    if name == "planner":
        return PlannerOracle()
    from recaudit.simulate._ppo import PPOOracle

    return PPOOracle(seed=derive_seed(seed, "mirror", "ppo")).train(world)


def run_sequential(cfg, progress=None) -> list[dict]:
    """The §5.3 benchmark over ``cfg.mixes`` and ``cfg.seeds`` (see :mod:`_runner`)."""

    tc = TopicConfig()
    rows: list[dict] = []
    kw = {"rbo_p": cfg.rbo_p, "rbo_variant": cfg.rbo_variant, "ps_k": cfg.ps_k}
    for seed in cfg.seeds:
        world = TopicWorld.sample(tc, make_rng(seed, "mirror", cfg.scenario, "scenario"))
        u0 = make_rng(seed, "mirror", "users").uniform(0.0, 1.0, (cfg.eval_size, tc.n_topics))
        unbiased, manip = UnbiasedTopicOracle(), _manipulative(cfg.resolved_manipulative(),
                                                                world, seed)

        def record(name, mix, res):
            for met, val in res.summary().items():
                rows.append(result_row(cfg.scenario, name, mix, seed, met, val))
            for r, (ctr_r, ps_r) in enumerate(zip(res.ctr_by_round(), res.shift.mean(axis=1))):
                rows.append(result_row(cfg.scenario, name, mix, seed, "ctr", ctr_r, r + 1))
                rows.append(result_row(cfg.scenario, name, mix, seed, "ps", ps_r, r + 1))

        for pol in (unbiased, manip):
            record(pol.name, None, simulate_sessions(
                world, u0, pol, make_rng(seed, "mirror", "eval", pol.name), **kw))
        for mix in cfg.mixes:
            # stage 2: the same users; round(mix * n) of them served by the manipulative oracle
            rng = make_rng(seed, "mirror", "collect", float(mix))
            n_train = min(cfg.train_size, cfg.eval_size)
            users = rng.choice(cfg.eval_size, size=n_train, replace=False)
            is_manip = np.zeros(n_train, dtype=bool)
            is_manip[rng.permutation(n_train)[: int(round(mix * n_train))]] = True
            parts = []
            for flag, pol in ((False, EpsilonPolicy(unbiased, cfg.explore)),
                              (True, EpsilonPolicy(manip, cfg.explore))):
                sub = users[is_manip == flag]
                if sub.size:
                    parts.append((sub, simulate_sessions(world, u0[sub], pol, rng, **kw)))
            split = make_rng(seed, "mirror", "split", float(mix))
            for algo in cfg.resolved_algorithms():
                if progress:
                    progress(f"seed {seed} mix {mix:g}: {algo}")
                static = algo == "GRU-static"
                data = [_training_rows(world, res, u0[sub], np.arange(sub.size), static)
                        for sub, res in parts]
                x = np.concatenate([d[0] for d in data])
                d = np.concatenate([d[1] for d in data])
                h = [hh for dd in data for hh in dd[2]]
                y = np.concatenate([d[3] for d in data])
                test = split.random(len(y)) < cfg.test_fraction
                tr, te = np.flatnonzero(~test), np.flatnonzero(test)
                model = _model(algo, cfg).fit(
                    x[tr], d[tr], [h[i] for i in tr], y[tr], np.eye(tc.n_topics)[world.topic],
                    seed=derive_seed(seed, "mirror", "fit", algo, float(mix)))
                s = model.score(x[te], d[te][:, None, :], [h[i] for i in te])[:, 0]
                rows.append(result_row(cfg.scenario, algo, mix, seed, "auc", _m.auc(s, y[te])))
                res = simulate_sessions(world, u0, ModelTopicPolicy(model, algo),
                                        make_rng(seed, "mirror", "eval", algo, float(mix)), **kw)
                record(algo, mix, res)
    return rows
