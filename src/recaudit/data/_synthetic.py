"""The embedded default dataset: a seeded generator of realistic sequential logs.

The generative story, per user ``u`` with ``n_u`` interactions:

1. *Items* belong to one of ``C`` taste clusters; their popularity follows a Zipf law
   ``w_i ∝ rank_i^{-zipf}`` (rank drawn at random), so a few items are very popular.
2. *User activity* is long-tailed: ``n_u = min_length + floor(LogNormal(log(mean_length -
   min_length), sigma))``, capped at ``max_length``.
3. *Taste* ``θ_u ~ Dirichlet(concentration)`` over clusters, and it drifts: before each step,
   with probability ``drift``, ``θ_u <- (1 - η) θ_u + η Dirichlet(concentration)``.
4. *Next item*: with probability ``follow`` the successor ``succ(prev)`` of the previous item
   (a fixed random item of the same cluster — the planted sequential pattern a sequential
   model can learn and a popularity model cannot); otherwise a cluster ``c ~ θ_u`` and an item
   of ``c`` in proportion to popularity.
5. *Time*: user start ``~ Uniform(0, horizon/2)``, gaps ``~ Exponential(mean_gap_u)`` seconds
   with a per-user mean gap; timestamps are ``int64`` and strictly increase per user.
6. Optional *ratings* ``clip(round(2 + 3 θ_{u,c}/max θ_u + N(0, 0.6)), 1, 5)`` and *item
   attributes* ``{"genre-c"}`` plus, with probability 0.3, one more random genre.

Everything is drawn from one ``numpy.random.Generator`` seeded by ``seed``: the same
parameters and seed give a bit-identical log. The loop runs over sequence positions, each step
vectorised across users, so 10⁷ interactions take seconds.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from recaudit.config import Config
from recaudit.data._interactions import Interactions

__all__ = ["SyntheticConfig", "synthetic"]


@dataclass(frozen=True)
class SyntheticConfig(Config):
    """Size and shape of a synthetic log (defaults: the demo dataset, ~15k interactions).

    n_users: number of users. n_items: catalogue size. n_clusters: taste clusters (at most
    n_items). mean_length: mean interactions per user. min_length: fewest interactions per
    user. max_length: most interactions per user. sigma: log-normal spread of user activity.
    zipf: exponent of item popularity. concentration: Dirichlet concentration of tastes.
    drift: probability per step that a user's taste drifts. drift_step: weight of the fresh
    taste in a drift. follow: probability of the planted successor of the previous item.
    horizon: time span in seconds. ratings: add 1-5 ratings. attributes: add genre attributes.
    """

    n_users: int = 500
    n_items: int = 300
    n_clusters: int = 10
    mean_length: float = 30.0
    min_length: int = 10
    max_length: int = 500
    sigma: float = 0.8
    zipf: float = 1.0
    concentration: float = 0.3
    drift: float = 0.05
    drift_step: float = 0.3
    follow: float = 0.35
    horizon: int = 10_000_000
    ratings: bool = False
    attributes: bool = False

    def validate(self) -> None:
        for key in ("n_users", "n_items", "n_clusters", "min_length", "max_length"):
            if getattr(self, key) < 1:
                raise self.invalid(key, f"must be >= 1, got {getattr(self, key)}")
        if self.n_clusters > self.n_items:
            raise self.invalid("n_clusters", f"must be <= n_items ({self.n_items}), got "
                                              f"{self.n_clusters}")
        if not self.min_length <= self.mean_length <= self.max_length:
            raise self.invalid("mean_length", "need min_length <= mean_length <= max_length")
        for key in ("drift", "drift_step", "follow"):
            if not 0.0 <= getattr(self, key) <= 1.0:
                raise self.invalid(key, f"must be in [0, 1], got {getattr(self, key)}")


def _pick_rows(cum: np.ndarray, u: np.ndarray) -> np.ndarray:
    """Inverse-CDF sampling per row: first column whose cumulative weight exceeds ``u``."""
    return np.minimum((cum < u[:, None]).sum(axis=1), cum.shape[1] - 1)


def synthetic(config: SyntheticConfig | None = None, *, seed: int = 0, **params) -> Interactions:
    """Generate a synthetic sequential log (see the module docstring for the model).

    ``synthetic(seed=1, n_users=1000)`` overrides fields of :class:`SyntheticConfig`.
    """
    base = (config or SyntheticConfig()).to_dict()
    cfg = SyntheticConfig.from_dict({**base, **params}, what="the synthetic dataset",
                                    noun="option")
    rng = np.random.default_rng(seed)
    nu, ni, nc = cfg.n_users, cfg.n_items, cfg.n_clusters

    cluster = np.concatenate([np.arange(nc), rng.integers(0, nc, ni - nc)])
    rng.shuffle(cluster)
    pop = 1.0 / (rng.permutation(ni) + 1.0) ** cfg.zipf
    # Items sorted by cluster; within cluster c the CDF is shifted by c, so one searchsorted
    # of ``c + u`` over the concatenation picks an item of cluster c with probability ∝ pop.
    by_cluster = np.argsort(cluster, kind="stable")
    members = np.split(by_cluster, np.cumsum(np.bincount(cluster, minlength=nc))[:-1])
    shifted_cdf = np.concatenate(
        [c + np.minimum(np.cumsum(pop[m]) / pop[m].sum(), 1.0) for c, m in enumerate(members)])
    shifted_cdf[np.cumsum([len(m) for m in members]) - 1] = np.arange(1, nc + 1)  # exact ends
    succ = np.empty(ni, dtype=np.int64)
    for m in members:  # clusters are non-empty: the first n_clusters items seed one each
        succ[m] = rng.permutation(m) if len(m) > 1 else m

    extra = np.floor(rng.lognormal(np.log(max(cfg.mean_length - cfg.min_length, 1.0)),
                                   cfg.sigma, nu)).astype(np.int64)
    lengths = np.minimum(cfg.min_length + extra, cfg.max_length)
    taste = rng.dirichlet(np.full(nc, cfg.concentration), nu)
    start = rng.integers(0, max(cfg.horizon // 2, 1), nu)
    mean_gap = rng.uniform(0.2, 2.0, nu) * cfg.horizon / (4 * cfg.mean_length)

    total = int(lengths.sum())
    out_u = np.empty(total, dtype=np.int64)
    out_i = np.empty(total, dtype=np.int64)
    out_t = np.empty(total, dtype=np.int64)
    out_r = np.empty(total, dtype=np.float32) if cfg.ratings else None
    order = np.argsort(-lengths, kind="stable")  # active users are a prefix of `order`
    offset = np.zeros(nu, dtype=np.int64)
    offset[order] = np.concatenate([[0], np.cumsum(lengths[order])[:-1]])
    prev = np.full(nu, -1, dtype=np.int64)
    clock = start.astype(np.int64)
    sorted_len = lengths[order]
    for t in range(int(lengths.max())):
        act = order[: np.searchsorted(-sorted_len, -t, side="left")]
        act = act[lengths[act] > t]
        drifting = act[rng.random(len(act)) < cfg.drift]
        if len(drifting):
            fresh = rng.dirichlet(np.full(nc, cfg.concentration), len(drifting))
            taste[drifting] = (1 - cfg.drift_step) * taste[drifting] + cfg.drift_step * fresh
        c = _pick_rows(np.cumsum(taste[act], axis=1), rng.random(len(act)))
        pick = np.searchsorted(shifted_cdf, c + rng.random(len(act)), side="right")
        item = by_cluster[np.minimum(pick, ni - 1)]
        follow = (rng.random(len(act)) < cfg.follow) & (prev[act] >= 0)
        item[follow] = succ[prev[act][follow]]
        clock[act] += 1 + np.floor(rng.exponential(mean_gap[act])).astype(np.int64)
        pos = offset[act] + t
        out_u[pos], out_i[pos], out_t[pos] = act, item, clock[act]
        if out_r is not None:
            ci = cluster[item]
            aff = taste[act, ci] / taste[act].max(axis=1)
            out_r[pos] = np.clip(np.round(2 + 3 * aff + rng.normal(0, 0.6, len(act))), 1, 5)
        prev[act] = item

    attrs = None
    if cfg.attributes:
        second = rng.integers(0, nc, ni)
        has2 = rng.random(ni) < 0.3
        attrs = {i: frozenset({f"genre-{cluster[i]}"} | ({f"genre-{second[i]}"} if has2[i]
                                                          else set())) for i in range(ni)}
    return Interactions(out_u, out_i, out_t, out_r, np.arange(nu), np.arange(ni), attrs,
                        "synthetic")
