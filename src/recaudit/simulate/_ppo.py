"""PPO oracle (Zhu et al. 2023, §5.4.1): a click-maximising policy trained online by PPO.

The paper uses PPO (Schulman et al. 2017) where enumerating slates is infeasible: a policy trained
by interacting with the user model, rewarded by clicks, regardless of FCTR. Ours plays the topic
scenario (:mod:`._topic`): at each round the policy scores every recalled candidate from observable
features only -- the user's profile ``u^0``, the candidate's topic, ``u^0_{t(d)}``, this session's
clicks on that topic and in total, and the round -- and picks one (softmax over candidates). The
reward is the sampled click. Training is standard clipped PPO with a learned value baseline:

* advantages by GAE(``gamma``, ``lam``) over each user's episode (it ends when the budget is spent
  or after ``n_rounds``);
* loss ``-min(rho A, clip(rho, 1-eps, 1+eps) A) + c_v (V - R)^2 - c_H H(pi)`` with
  ``rho = pi(a|s) / pi_old(a|s)``, advantages normalised per batch;
* every iteration plays ``batch_users`` fresh users (profiles from the scenario's user model).

As a data-collection strategy it shows the candidate of highest policy probability. All randomness
(users, recall, clicks, actions, initial weights, minibatches) derives from ``seed``.

:class:`SlatePPOOracle` does the same for any :class:`SlateScenario` (§5.4.1's form): the policy
builds the slate one position at a time, choosing among the not yet placed candidates from their
observable features, the user's observable features, the position and the mean features of the
documents already placed; the reward is sparse -- the sampled clicks on the finished slate, given
at its last step (``gamma = 1`` within a slate). ``PPOConfig(expected_reward=True)`` rewards the
expected number of clicks instead, a lower-variance signal for scenarios (like the decoy slates)
whose CTR differences are small.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from recaudit.seeds import make_rng, make_torch_generator
from recaudit.simulate._topic import TopicUsers, recall
from recaudit._torch import deterministic_torch
from recaudit.simulate._torch_util import seeded_init

__all__ = ["PPOConfig", "PPOOracle", "SlatePPOOracle"]


@dataclass(frozen=True)
class PPOConfig:
    """PPO hyper-parameters (small defaults: a few seconds on one CPU thread)."""

    iterations: int = 40
    batch_users: int = 64
    epochs: int = 4
    minibatch: int = 256
    lr: float = 3e-3
    gamma: float = 0.99
    lam: float = 0.95
    clip: float = 0.2
    value_coef: float = 0.5
    entropy_coef: float = 0.01
    hidden: int = 32
    expected_reward: bool = False  # slate PPO: reward = expected clicks instead of sampled ones


def _features(world, users: TopicUsers, cands: np.ndarray):
    """Per-candidate features ``[B, k, F]`` and per-user context ``[B, C]`` (observable only)."""
    c = world.config
    b, k = cands.shape
    session = np.zeros((b, c.n_topics))
    for i, h in enumerate(users.history):
        extra = h[users.n_initial:]
        if extra:
            np.add.at(session[i], world.topic[np.asarray(extra)], 1.0)
    session /= c.n_rounds
    t = world.topic[cands]
    rnd = np.full((b, 1), users.round / c.n_rounds)
    ctx = np.concatenate([users.u0, session, rnd], axis=1)
    per = np.concatenate([
        np.repeat(users.u0[:, None, :], k, axis=1), world.one_hot(cands),
        np.take_along_axis(users.u0, t, axis=1)[..., None],
        np.take_along_axis(session, t, axis=1)[..., None],
        np.repeat(session.sum(1, keepdims=True)[:, None, :], k, axis=1),
        np.repeat(rnd[:, None, :], k, axis=1)], axis=2)
    return per.astype(np.float32), ctx.astype(np.float32)


class PPOOracle:
    """Click-maximising PPO policy for the topic scenario (see the module docstring)."""

    name = "PPO Oracle"

    def __init__(self, seed: int = 0, config: PPOConfig | None = None) -> None:
        self.seed = seed
        self.config = config or PPOConfig()

    def _nets(self, n_feat: int, n_ctx: int):
        from torch import nn

        h = self.config.hidden
        pi = nn.Sequential(nn.Linear(n_feat, h), nn.Tanh(), nn.Linear(h, h), nn.Tanh(),
                           nn.Linear(h, 1))
        v = nn.Sequential(nn.Linear(n_ctx, h), nn.Tanh(), nn.Linear(h, 1))
        return pi, v

    def train(self, world) -> PPOOracle:
        """Train the policy on ``world`` (a :class:`TopicWorld`); returns ``self``."""
        import torch

        cfg = self.config
        g = make_torch_generator(self.seed, "ppo", "torch")
        self.returns_: list[float] = []
        with deterministic_torch():
            probe = TopicUsers.sample(world, 1, make_rng(self.seed, "ppo", "probe"))
            f0, c0 = _features(world, probe, recall(world, 1, make_rng(self.seed, "ppo", "p")))
            self.pi_, self.v_ = self._nets(f0.shape[2], c0.shape[1])
            seeded_init(self.pi_, g)
            seeded_init(self.v_, g)
            opt = torch.optim.Adam([*self.pi_.parameters(), *self.v_.parameters()], lr=cfg.lr)
            for it in range(cfg.iterations):
                rng = make_rng(self.seed, "ppo", "rollout", it)
                batch = self._rollout(world, rng, g)
                self.returns_.append(float(batch["rew"].sum(0).mean()))
                self._update(batch, opt, g)
        return self

    def _rollout(self, world, rng, g):
        import torch

        cfg, c = self.config, world.config
        users = TopicUsers.sample(world, cfg.batch_users, rng)
        keys = ("feat", "ctx", "act", "logp", "val", "rew", "mask")
        buf: dict[str, list[Any]] = {k: [] for k in keys}
        for _ in range(c.n_rounds):
            cands = recall(world, cfg.batch_users, rng)
            feat, ctx = _features(world, users, cands)
            with torch.no_grad():
                logits = self.pi_(torch.from_numpy(feat)).squeeze(-1)
                val = self.v_(torch.from_numpy(ctx)).squeeze(-1)
                dist = torch.distributions.Categorical(logits=logits)
                u = torch.rand(cfg.batch_users, generator=g)
                cdf = torch.cumsum(dist.probs, dim=1)
                act = torch.searchsorted(cdf, u[:, None]).squeeze(1).clamp_max(cands.shape[1] - 1)
                logp = dist.log_prob(act)
            mask = users.active.copy()
            _, clicks = users.step(world, cands[np.arange(cfg.batch_users), act.numpy()], rng)
            for k, v in zip(keys, (feat, ctx, act.numpy(), logp.numpy(), val.numpy(),
                                   clicks.astype(np.float32) * mask, mask)):
                buf[k].append(v)
        out = {k: np.stack(v) for k, v in buf.items()}  # [R, B, ...]
        # GAE per user; a step is terminal when the next one is inactive or the horizon ends
        r_, b_ = out["rew"].shape
        adv = np.zeros((r_, b_), dtype=np.float32)
        last = np.zeros(b_, dtype=np.float32)
        for t in range(r_ - 1, -1, -1):
            nxt = out["mask"][t + 1] if t + 1 < r_ else np.zeros(b_, dtype=bool)
            next_val = np.where(nxt, out["val"][t + 1] if t + 1 < r_ else 0.0, 0.0)
            delta = out["rew"][t] + cfg.gamma * next_val - out["val"][t]
            last = np.where(out["mask"][t], delta + cfg.gamma * cfg.lam * np.where(nxt, last, 0.0),
                            0.0).astype(np.float32)
            adv[t] = last
        out["adv"], out["ret"] = adv, adv + out["val"]
        return out

    def _update(self, batch, opt, g) -> None:
        import torch

        cfg = self.config
        idx = np.flatnonzero(batch["mask"].reshape(-1))
        if idx.size == 0:
            return
        flat = {k: torch.from_numpy(np.ascontiguousarray(
            v.reshape(-1, *v.shape[2:])[idx])) for k, v in batch.items() if k != "mask"}
        adv = flat["adv"]
        flat["adv"] = (adv - adv.mean()) / (adv.std() + 1e-8) if adv.numel() > 1 else adv
        n = idx.size
        for _ in range(cfg.epochs):
            perm = torch.randperm(n, generator=g)
            for s in range(0, n, cfg.minibatch):
                j = perm[s:s + cfg.minibatch]
                logits = self.pi_(flat["feat"][j]).squeeze(-1)
                if "avail" in flat:
                    logits = logits.masked_fill(~flat["avail"][j], -1e9)
                dist = torch.distributions.Categorical(logits=logits)
                ratio = torch.exp(dist.log_prob(flat["act"][j]) - flat["logp"][j])
                a = flat["adv"][j]
                pol = -torch.min(ratio * a, ratio.clamp(1 - cfg.clip, 1 + cfg.clip) * a).mean()
                vloss = (self.v_(flat["ctx"][j]).squeeze(-1) - flat["ret"][j]).pow(2).mean()
                loss = pol + cfg.value_coef * vloss - cfg.entropy_coef * dist.entropy().mean()
                opt.zero_grad()
                loss.backward()
                opt.step()

    def select(self, world, users: TopicUsers, cands: np.ndarray, rng) -> np.ndarray:
        import torch

        if not hasattr(self, "pi_"):
            raise RuntimeError("PPOOracle is not trained: call train(world) first")
        feat, _ = _features(world, users, cands)
        with deterministic_torch(), torch.no_grad():
            logits = self.pi_(torch.from_numpy(feat)).squeeze(-1).numpy()
        return cands[np.arange(len(cands)), np.argmax(logits, axis=1)]


class SlatePPOOracle(PPOOracle):
    """Click-maximising PPO slate builder for any slate scenario (see the module docstring)."""

    def _slate_features(self, scenario, users, cands, chosen, step):
        fx = scenario.features
        uo = fx.users(scenario.users[users])               # [B, g]
        do = fx.documents(scenario.documents.features[cands])  # [B, m, f]
        b, m, _ = do.shape
        k = scenario.slate_size
        pos = np.zeros((b, k))
        pos[:, step] = 1.0
        taken = chosen.sum(1, keepdims=True)
        placed = (chosen[:, :, None] * do).sum(1) / np.maximum(taken, 1)  # [B, f]
        ctx = np.concatenate([uo, placed, do.mean(1), pos], axis=1)
        per = np.concatenate([np.repeat(uo[:, None], m, 1), do, np.repeat(placed[:, None], m, 1),
                              np.repeat(pos[:, None], m, 1)], axis=2)
        return per.astype(np.float32), ctx.astype(np.float32)

    def train(self, scenario) -> SlatePPOOracle:
        """Train on ``scenario`` (a :class:`SlateScenario`); returns ``self``."""
        import torch

        from recaudit.simulate._slate import draw_sessions

        cfg = self.config
        g = make_torch_generator(self.seed, "slate-ppo", "torch")
        self.returns_ = []
        with deterministic_torch():
            u, _, c = draw_sessions(scenario, 1, make_rng(self.seed, "slate-ppo", "probe"))
            f0, c0 = self._slate_features(scenario, u, c, np.zeros(c.shape), 0)
            self.pi_, self.v_ = self._nets(f0.shape[2], c0.shape[1])
            seeded_init(self.pi_, g)
            seeded_init(self.v_, g)
            opt = torch.optim.Adam([*self.pi_.parameters(), *self.v_.parameters()], lr=cfg.lr)
            for it in range(cfg.iterations):
                rng = make_rng(self.seed, "slate-ppo", "rollout", it)
                sessions = draw_sessions(scenario, cfg.batch_users, rng)
                batch = self._slate_rollout(scenario, sessions, rng, g)
                self.returns_.append(float(batch["rew"].sum(0).mean()))
                self._update(batch, opt, g)
        return self

    def _build(self, scenario, users, cands, g=None):
        """Build slates position by position; sample with ``g`` or take the arg max."""
        import torch

        b, m = cands.shape
        chosen = np.zeros((b, m))
        steps = []
        for step in range(scenario.slate_size):
            feat, ctx = self._slate_features(scenario, users, cands, chosen, step)
            avail = chosen == 0
            with torch.no_grad():
                logits = self.pi_(torch.from_numpy(feat)).squeeze(-1)
                logits = logits.masked_fill(~torch.from_numpy(avail), -1e9)
                dist = torch.distributions.Categorical(logits=logits)
                if g is None:
                    act = torch.argmax(logits, dim=1)
                else:
                    cdf = torch.cumsum(dist.probs, dim=1)
                    act = torch.searchsorted(cdf, torch.rand(b, 1, generator=g)).squeeze(1)
                    act = act.clamp_max(m - 1)
                logp = dist.log_prob(act)
                val = self.v_(torch.from_numpy(ctx)).squeeze(-1)
            chosen[np.arange(b), act.numpy()] = 1.0
            steps.append((feat, ctx, act.numpy(), logp.numpy(), val.numpy(), avail))
        return steps

    def _slate_rollout(self, scenario, sessions, rng, g):
        users, _, cands = sessions
        steps = self._build(scenario, users, cands, g)
        order = np.stack([s[2] for s in steps], axis=1)
        slates = np.take_along_axis(cands, order, axis=1)
        probs = np.stack([scenario.click_probabilities(u, sl) for u, sl in zip(users, slates)])
        if self.config.expected_reward:
            clicks = probs.sum(1).astype(np.float32)
        else:
            clicks = (rng.random(probs.shape) < probs).sum(1).astype(np.float32)
        k, b = len(steps), len(users)
        rew = np.zeros((k, b), dtype=np.float32)
        rew[-1] = clicks
        val = np.stack([s[4] for s in steps])
        adv = np.zeros((k, b), dtype=np.float32)
        last = np.zeros(b, dtype=np.float32)
        for t in range(k - 1, -1, -1):
            next_val = val[t + 1] if t + 1 < k else 0.0
            delta = rew[t] + next_val - val[t]
            last = (delta + self.config.lam * last).astype(np.float32)
            adv[t] = last
        return {"feat": np.stack([s[0] for s in steps]), "ctx": np.stack([s[1] for s in steps]),
                "act": np.stack([s[2] for s in steps]), "logp": np.stack([s[3] for s in steps]),
                "val": val, "rew": rew, "mask": np.ones((k, b), dtype=bool),
                "avail": np.stack([s[5] for s in steps]), "adv": adv, "ret": adv + val}

    def rank(self, scenario, users, queries, candidates, rng):
        if not hasattr(self, "pi_"):
            raise RuntimeError("SlatePPOOracle is not trained: call train(scenario) first")
        with deterministic_torch():
            steps = self._build(scenario, np.asarray(users), np.asarray(candidates))
        order = np.stack([s[2] for s in steps], axis=1)
        return np.take_along_axis(np.asarray(candidates), order, axis=1)
