"""Slate scenarios: stage 1 (initial preferences), stage 2 (data collection with mixing) and the
online evaluation of stage 3/4 (Zhu et al. 2023, §4.2), for any action model.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from recaudit.simulate import _measures as _m
from recaudit.simulate._components import (ActionModel, DocumentSampler, DocumentSet,
                                           FeatureExtractor, as_action_model)

__all__ = ["SlateScenario", "SlateLog", "SlatePolicy", "UnbiasedSlateOracle", "GreedySlateOracle",
           "ModelSlatePolicy", "collect_slates", "evaluate_slates", "draw_sessions"]


@dataclass
class SlateScenario:
    """A slate recommendation scenario built from MIRROR components.

    ``users[i]`` is user ``i``'s full initial feature vector (static in slate scenarios);
    ``user_queries[i]`` the queries user ``i`` may issue (a session draws a user uniformly, then one
    of their queries uniformly); ``sampler`` recalls candidates from the query's documents; the top
    ``slate_size`` of a policy's ranking are shown. ``favourite_k`` is ``K`` of Def. 4.2.
    """

    name: str
    documents: DocumentSet
    users: np.ndarray
    user_queries: tuple[np.ndarray, ...]
    action_model: ActionModel
    sampler: DocumentSampler
    slate_size: int
    favourite_k: int = 1
    user_observable: np.ndarray | None = None
    _cache: dict = field(default_factory=dict, init=False, repr=False)
    _phi: np.ndarray | None = field(default=None, init=False, repr=False)
    _fav: dict = field(default_factory=dict, init=False, repr=False)

    def __post_init__(self) -> None:
        self.users = np.atleast_2d(np.asarray(self.users, dtype=np.float64))
        self.action_model = as_action_model(self.action_model)
        if len(self.user_queries) != self.users.shape[0]:
            raise ValueError(f"user_queries needs one entry per user ({self.users.shape[0]}); "
                             f"got {len(self.user_queries)}")
        if self.slate_size < 1:
            raise ValueError(f"slate_size must be >= 1; got {self.slate_size}")
        if self.user_observable is None:
            self.user_observable = np.ones(self.users.shape[1], dtype=bool)

    @property
    def features(self) -> FeatureExtractor:
        return FeatureExtractor(np.asarray(self.user_observable, dtype=bool),
                                self.documents.observable)

    def click_probabilities(self, user: int, docs) -> np.ndarray:
        """``M(u_user, d, D)`` for each document of the slate ``docs`` (shown order); memoised."""
        key = (int(user), tuple(int(d) for d in docs))
        out = self._cache.get(key)
        if out is None:
            out = np.asarray(self.action_model.click_probabilities(
                self.users[user], self.documents.features[list(key[1])]), dtype=np.float64)
            if out.shape != (len(key[1]),):
                raise ValueError(f"the action model returned shape {out.shape} for a slate of "
                                 f"{len(key[1])} documents")
            self._cache[key] = out
        return out

    def initial_preferences(self) -> np.ndarray:
        """Stage 1: ``phi[i, d] = M(u_i^0, d, {d})`` for the documents of user ``i``'s queries
        (``nan`` elsewhere)."""
        if self._phi is None:
            phi = np.full((self.users.shape[0], self.documents.n_docs), np.nan)
            for i, qs in enumerate(self.user_queries):
                for q in qs:
                    for d in self.documents.documents(int(q)):
                        if np.isnan(phi[i, d]):
                            phi[i, d] = self.click_probabilities(i, [d])[0]
            self._phi = phi
        return self._phi

    def favourites(self, user: int, query: int) -> frozenset[int]:
        """``F^K`` (Def. 4.2) of the user's query: the ``favourite_k`` best documents by ``phi``."""
        key = (int(user), int(query))
        if key not in self._fav:
            docs = self.documents.documents(query)
            top = _m.favourite_set(self.initial_preferences()[user, docs], self.favourite_k)
            self._fav[key] = frozenset(int(d) for d in docs[top])
        return self._fav[key]


def draw_sessions(scenario: SlateScenario, n: int, rng: np.random.Generator):
    """``n`` sessions: user ids, query ids and recalled candidates ``[n, m]``."""
    users = rng.integers(0, scenario.users.shape[0], size=n)
    queries = np.empty(n, dtype=np.int64)
    cands = []
    for t, u in enumerate(users):
        qs = scenario.user_queries[u]
        queries[t] = qs[rng.integers(0, len(qs))]
        cands.append(scenario.sampler.recall(scenario.documents.documents(int(queries[t])), rng))
    return users, queries, np.stack(cands)


class SlatePolicy(Protocol):
    """A ranking strategy: returns the shown slates ``[B, slate_size]`` (document ids, in order)."""

    def rank(self, scenario: SlateScenario, users: np.ndarray, queries: np.ndarray,
             candidates: np.ndarray, rng: np.random.Generator) -> np.ndarray: ...


class UnbiasedSlateOracle:
    """Ranks candidates by initial preference ``phi`` (ties: candidate order) -- Def. 4.4 as we
    define it, the paper's Unbiased Oracle."""

    name = "Unbiased Oracle"

    def rank(self, scenario, users, queries, candidates, rng):
        phi = scenario.initial_preferences()
        out = np.empty((len(users), scenario.slate_size), dtype=np.int64)
        for t, (u, c) in enumerate(zip(users, candidates)):
            out[t] = c[np.argsort(-phi[u, c], kind="stable")[: scenario.slate_size]]
        return out


class GreedySlateOracle:
    """Enumerates every ordered slate of the candidates and shows the one with the most expected
    clicks (§5.2.1's Greedy Oracle); ties go to the first in enumeration order. Refuses more than
    ``max_slates`` permutations."""

    name = "Greedy Oracle"

    def __init__(self, max_slates: int = 50_000) -> None:
        self.max_slates = max_slates

    def rank(self, scenario, users, queries, candidates, rng):
        import math

        k = scenario.slate_size
        m = candidates.shape[1]
        if math.perm(m, k) > self.max_slates:
            raise ValueError(f"the Greedy Oracle would enumerate {math.perm(m, k)} slates "
                             f"(> max_slates={self.max_slates}); use the PPO oracle instead")
        out = np.empty((len(users), k), dtype=np.int64)
        for t, (u, c) in enumerate(zip(users, candidates)):
            best, best_val = None, -1.0
            for perm in itertools.permutations(c.tolist(), k):
                val = scenario.click_probabilities(u, perm).sum()
                if val > best_val:
                    best, best_val = perm, val
            out[t] = best
        return out


class ModelSlatePolicy:
    """Ranks with a trained slate model (observable features only, via the feature extractor)."""

    def __init__(self, model, name: str | None = None) -> None:
        self.model = model
        self.name = name or type(model).__name__

    def rank(self, scenario, users, queries, candidates, rng):
        fx = scenario.features
        scores = self.model.score(fx.users(scenario.users[users]),
                                  fx.documents(scenario.documents.features[candidates]))
        order = np.argsort(-scores, axis=1, kind="stable")[:, : scenario.slate_size]
        return np.take_along_axis(candidates, order, axis=1)


@dataclass(frozen=True)
class SlateLog:
    """Logged slates: who, which query, shown docs, sampled clicks, the click probabilities and
    which strategy (index into the mixed policies) showed each slate."""

    users: np.ndarray
    queries: np.ndarray
    slates: np.ndarray
    clicks: np.ndarray
    probs: np.ndarray
    strategy: np.ndarray

    def take(self, rows) -> SlateLog:
        return SlateLog(*(getattr(self, f)[rows] for f in
                          ("users", "queries", "slates", "clicks", "probs", "strategy")))


def collect_slates(scenario: SlateScenario, policies, alpha: float, n: int,
                   rng: np.random.Generator) -> SlateLog:
    """Stage 2 with mixing: ``round(alpha n)`` randomly chosen slates are ranked by ``policies[1]``
    (the manipulative strategy), the rest by ``policies[0]``; clicks ~ Bernoulli(M)."""
    if not 0.0 <= alpha <= 1.0:
        raise ValueError(f"the mix ratio alpha must lie in [0, 1]; got {alpha}")
    users, queries, cands = draw_sessions(scenario, n, rng)
    strategy = np.zeros(n, dtype=np.int64)
    strategy[rng.permutation(n)[: int(round(alpha * n))]] = 1
    slates = np.empty((n, scenario.slate_size), dtype=np.int64)
    for s, pol in enumerate(policies):
        rows = np.flatnonzero(strategy == s)
        if rows.size:
            slates[rows] = pol.rank(scenario, users[rows], queries[rows], cands[rows], rng)
    probs = np.stack([scenario.click_probabilities(u, sl) for u, sl in zip(users, slates)])
    clicks = (rng.random(probs.shape) < probs).astype(np.float64)
    return SlateLog(users, queries, slates, clicks, probs, strategy)


def evaluate_slates(scenario: SlateScenario, policy, sessions, rng: np.random.Generator) -> dict:
    """Online metrics of ``policy`` on fixed ``sessions`` (expected values, Defs. 4.1-4.5):
    mean CTR, FCTR and ManiScore over slates, and the shown slates."""
    users, queries, cands = sessions
    slates = policy.rank(scenario, users, queries, cands, rng)
    phi = scenario.initial_preferences()
    ctrs, fctrs, manis = [], [], []
    for u, q, sl in zip(users, queries, slates):
        fav = scenario.favourites(u, q)
        flags = np.array([d in fav for d in sl])
        p = scenario.click_probabilities(u, sl)
        c, f = _m.ctr(p), _m.fctr(p, flags)
        cu, fu = 0.0, 1.0
        for order in _m.unbiased_rankings(phi[u, sl]):
            ub = sl[list(order)]
            pu = scenario.click_probabilities(u, ub)
            cu = max(cu, _m.ctr(pu))
            fu = min(fu, np.nan_to_num(_m.fctr(pu, flags[list(order)]), nan=0.0))
        ctrs.append(c)
        fctrs.append(f)
        manis.append(_m.mani_score(c, np.nan_to_num(f, nan=0.0), cu, fu))
    return {"ctr": float(np.mean(ctrs)), "fctr": float(np.nanmean(fctrs)),
            "mani_score": float(np.mean(manis)), "slates": slates}
