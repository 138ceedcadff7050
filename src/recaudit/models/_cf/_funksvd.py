"""FunkSVD (``"funksvd"``): biased matrix factorisation trained feature by feature with SGD.

Simon Funk's 2006 method as implemented by LensKit (Shriver 2018 §3.4.1.1 uses 25 features). The
baseline is the damped bias model

    mu = mean rating;  b_i = sum_u (r_ui - mu) / (n_i + d);
    b_u = sum_i (r_ui - mu - b_i) / (n_u + d)

and the prediction is ``s(u, i) = mu + b_i + b_u + p_u . q_i``. Features start at ``init``
(0.1) and are trained one at a time: for feature ``f`` and ``iterations`` passes over the
ratings in a seeded random order,

    e = r_ui - (mu + b_i + b_u + sum_{g<f} p_ug q_ig + p_uf q_if + init^2 (F - f - 1))
    p_uf += lrate (e q_if - reg p_uf);   q_if += lrate (e p_uf - reg q_if)

(the last term stands for the untrained trailing features). Users or items without a training
rating are unscorable (``NaN``), like LensKit's out-of-vocabulary entities. The SGD kernel is
numba-compiled; with the same data and seed the factors are bit-identical.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from recaudit._jit import njit
from recaudit.models._cf._base import RatingConfig, RatingRecommender
from recaudit.models._registry import register

__all__ = ["FunkSVD"]


@njit(cache=True)
def _train(users, items, ratings, base, P, Q, iterations, lrate, reg, init):
    n_feat = P.shape[1]
    est = base.copy()
    for f in range(n_feat):
        trail = init * init * (n_feat - f - 1)
        for _ in range(iterations):
            for s in range(len(users)):
                u = users[s]
                i = items[s]
                uf = P[u, f]
                jf = Q[i, f]
                err = ratings[s] - (est[s] + uf * jf + trail)
                P[u, f] = uf + lrate * (err * jf - reg * uf)
                Q[i, f] = jf + lrate * (err * uf - reg * jf)
        for s in range(len(users)):
            est[s] += P[users[s], f] * Q[items[s], f]


def _damped(sums: np.ndarray, counts: np.ndarray, damping: float) -> np.ndarray:
    """``sums / (counts + damping)``, 0 where the denominator is 0."""
    den = counts + damping
    return np.divide(sums, den, out=np.zeros(len(sums)), where=den > 0)


@dataclass(frozen=True)
class FunkSVDConfig(RatingConfig):
    """FunkSVD options.

    features: latent factors (25, as in Shriver 2018). iterations: SGD passes per feature.
    lrate: learning rate (> 0). reg: L2 regularisation of the factors. damping: damping of
    the user and item biases. init: initial value of every factor.
    """

    features: int = 25
    iterations: int = 100
    lrate: float = 0.001
    reg: float = 0.015
    damping: float = 5.0
    init: float = 0.1

    def validate(self) -> None:
        for key in ("features", "iterations"):
            if getattr(self, key) < 1:
                raise self.invalid(key, f"must be a positive integer, got {getattr(self, key)}")
        for key in ("lrate", "reg", "damping", "init"):
            v = getattr(self, key)
            if v < 0 or (key == "lrate" and v == 0):
                raise self.invalid(key, f"must be a non-negative number"
                                        f"{' (> 0)' if key == 'lrate' else ''}, got {v!r}")


@register("funksvd")
class FunkSVD(RatingRecommender):
    """Biased FunkSVD with ``features`` latent factors (default 25, as in Shriver 2018)."""

    Config = FunkSVDConfig

    def _fit(self, R: sp.csr_array, rng: np.random.Generator) -> None:
        c = self.config
        coo = R.tocoo()
        users = coo.row.astype(np.int64)
        items = coo.col.astype(np.int64)
        r = coo.data.astype(np.float64)
        mu = self.global_mean_
        n_i = np.bincount(items, minlength=R.shape[1])
        n_u = np.bincount(users, minlength=R.shape[0])
        # damping 0 (LensKit Java's default) leaves unrated items/users at 0 / 0: bias 0
        b_i = _damped(np.bincount(items, weights=r - mu, minlength=R.shape[1]), n_i, c.damping)
        b_u = _damped(np.bincount(users, weights=r - mu - b_i[items], minlength=R.shape[0]),
                      n_u, c.damping)
        order = rng.permutation(len(r))
        users, items, r = users[order], items[order], r[order]
        P = np.full((R.shape[0], c.features), c.init)
        Q = np.full((R.shape[1], c.features), c.init)
        base = mu + b_i[items] + b_u[users]
        _train(users, items, r, base, P, Q, c.iterations, float(c.lrate), float(c.reg),
               float(c.init))
        self.mu_, self.item_bias_, self.user_bias_ = mu, b_i, b_u
        self.user_factors_, self.item_factors_ = P, Q
        self.known_users_, self.known_items_ = n_u > 0, n_i > 0

    def _score_users(self, users: np.ndarray) -> np.ndarray:
        s = self.user_factors_[users] @ self.item_factors_.T
        s += self.mu_ + self.item_bias_[None, :] + self.user_bias_[users, None]
        s[:, ~self.known_items_] = np.nan
        s[~self.known_users_[users]] = np.nan
        return s
