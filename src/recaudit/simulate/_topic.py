"""The synthetic topic / quality / time-budget sequential scenario (Zhu et al. 2023, §5.3).

The paper adopts the scenario of RecSim's *interest evolution* environment (its refs. [42, 43]: Ie
et al. 2019, RecSim and SlateQ) and gives its structure -- m = 10 topics, 10 documents per topic,
one of 10 recalled documents shown per round, at most 20 rounds, Gaussian quality by topic, a time
budget consumed according to quality -- but not its constants. Where the paper is silent we follow
RecSim's rules, expressed on the paper's preference scale ``u in [0, 1]`` (RecSim's interest
``I in [-1, 1]`` is ``I = 2u - 1``); the budget constants are ours (:class:`TopicConfig`).

World: document ``d`` has a topic ``t(d)`` (observable, one-hot) and a hidden quality
``q_d ~ N(mu_{t(d)}, quality_sd^2)``; the topic means ``mu`` are evenly spaced in ``[-1, 1]`` and
assigned to topics in a random order.

User: observable profile ``u^0 ~ U(0, 1)^m`` (initial topic preferences), hidden current
preferences ``u^r``, hidden time budget ``B`` (``budget`` at the start) and a click history (the
documents clicked in this session, after ``initial_history`` documents drawn with probability
proportional to ``u^0_{t(d)}``; 0 by default: the paper's GRU sees "clicked documents during the
current interaction", an initial history only matters for GRU Static).

Round ``r`` (at most ``n_rounds``): ``n_recall`` documents are recalled uniformly at random, the
policy shows one of them, ``d``, with ``u = u^{r-1}_{t(d)}``; the user (if ``B > 0``) clicks with
probability ``M(u^{r-1}, d, {d}) = g(u)``:

* ``click_model="proportional"`` (default; RecSim's multinomial proportional choice with no-click
  mass 1 and normaliser -1): ``g(u) = (I + 1) / (I + 3) = u / (u + 1)``, in ``[0, 1/2]``;
* ``click_model="linear"``: ``g(u) = u``.

A click costs ``max(click_cost - quality_cost q_d, min_cost)`` of the budget (RecSim: the video
length minus a bonus proportional to quality) and moves the preference for the clicked topic only:

* ``drift="interest"`` (default; RecSim's interest update): with probability ``(I + 1) / 2 = u``
  ``u <- u + D(u)``, else ``u <- u - D(u)``, clipped to ``[0, 1]``, where
  ``D(u) = drift_rate (1 - |2u - 1|) (1 - u)`` (RecSim's ``alpha(I) (1 - I) / 2`` with
  ``alpha(I) = 0.3 (1 - |I|)``). Liked topics become more liked, disliked ones less; a topic near
  ``u = 1`` hardly moves, so the Unbiased Oracle (which shows favourites) barely changes the
  preference order -- the paper's explanation of its small PS (§5.3.3);
* ``drift="quality"``: ``u <- clip(u + learning_rate q_d, 0, 1)`` (good documents make a topic more
  liked, bad ones less). This was our earlier reading; it makes the Unbiased Oracle's PS about
  2/3 of the Planner's (0.41 vs 0.63 at seed 0) instead of an order of magnitude smaller.

A skip costs ``skip_cost``. Users with ``B <= 0`` have left and count as no clicks (Fig. 10).

So the initial preference score of ``d`` is ``phi(d) = g(u^0_{t(d)})``, ordered like
``u^0_{t(d)}``; with ``favourite_k = docs_per_topic`` the favourite set (Def. 4.2) is the
documents of the user's favourite topic.

Oracles: the **Unbiased Oracle** shows the candidate with the highest ``phi`` (ties: candidate
order); the **Planner Oracle** scores each candidate by the expected cumulative clicks if it and
then documents of its topic with the topic's mean quality were shown in every remaining round,
computed by a mean-field (expected-value) rollout of the dynamics above from the user's true state:
``E[u'] = u + g(u) (2 P(up) - 1) D(u)`` (interest drift) or ``u + g(u) learning_rate q``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

from recaudit.config import Config

__all__ = ["TopicConfig", "TopicWorld", "TopicUsers", "UnbiasedTopicOracle", "PlannerOracle",
           "recall"]


@dataclass(frozen=True)
class TopicConfig(Config):
    """Constants of the sequential scenario (see the module docstring).

    n_topics: topics ``m``. docs_per_topic: documents of each topic. quality_sd: standard
    deviation of a document's quality around its topic's mean. n_recall: documents recalled
    per round. n_rounds: rounds per session at most. budget: a user's time budget ``B`` at
    the start. click_cost: the time a click costs before the quality bonus. quality_cost: the
    bonus per unit of quality. min_cost: the least a click costs. skip_cost: the time a skip
    costs. learning_rate: (``drift="quality"``) the preference change per unit of quality.
    initial_history: documents clicked before the session. favourite_k: size of the
    favourite set (None: ``docs_per_topic``, the favourite topic's documents). drift: how a
    click moves the preference (``interest``: RecSim's interest update; ``quality``).
    drift_rate: (``drift="interest"``) RecSim's ``alpha_y_intercept``. click_model: ``g(u)``
    (``proportional``: RecSim's multinomial proportional choice; ``linear``).
    """

    n_topics: int = 10
    docs_per_topic: int = 10
    quality_sd: float = 0.1
    n_recall: int = 10
    n_rounds: int = 20
    budget: float = 10.0
    click_cost: float = 1.0
    quality_cost: float = 0.5
    min_cost: float = 0.1
    skip_cost: float = 0.5
    learning_rate: float = 0.1
    initial_history: int = 0
    favourite_k: int | None = None
    drift: Literal["interest", "quality"] = "interest"
    drift_rate: float = 0.3
    click_model: Literal["proportional", "linear"] = "proportional"

    def validate(self) -> None:
        for name in ("n_topics", "docs_per_topic", "n_recall", "n_rounds"):
            if getattr(self, name) < 1:
                raise self.invalid(name, f"TopicConfig.{name} must be >= 1; got "
                                         f"{getattr(self, name)}")
        if self.n_recall > self.n_topics * self.docs_per_topic:
            raise self.invalid("n_recall", f"TopicConfig.n_recall ({self.n_recall}) exceeds "
                                           f"the number of documents "
                                           f"({self.n_topics * self.docs_per_topic})")
        for name in ("budget", "min_cost", "skip_cost"):
            if getattr(self, name) <= 0:
                raise self.invalid(name, "TopicConfig.budget, min_cost and skip_cost must be "
                                         "> 0")
        if self.initial_history < 0:
            raise self.invalid("initial_history", "TopicConfig.initial_history must be >= 0")
        if not 0.0 <= self.drift_rate <= 1.0:
            raise self.invalid("drift_rate", f"TopicConfig.drift_rate must lie in [0, 1]; got "
                                             f"{self.drift_rate}")

    @property
    def n_docs(self) -> int:
        return self.n_topics * self.docs_per_topic

    @property
    def k_favourite(self) -> int:
        return self.docs_per_topic if self.favourite_k is None else self.favourite_k


@dataclass(frozen=True)
class TopicWorld:
    """The document set: topic and hidden quality of every document, topic mean qualities."""

    config: TopicConfig
    topic: np.ndarray
    quality: np.ndarray
    topic_mean: np.ndarray

    @classmethod
    def sample(cls, config: TopicConfig, rng: np.random.Generator) -> TopicWorld:
        mu = rng.permutation(np.linspace(-1.0, 1.0, config.n_topics))
        topic = np.repeat(np.arange(config.n_topics), config.docs_per_topic)
        quality = mu[topic] + config.quality_sd * rng.standard_normal(config.n_docs)
        return cls(config, topic, quality, mu)

    def one_hot(self, docs: np.ndarray) -> np.ndarray:
        return np.eye(self.config.n_topics)[self.topic[docs]]

    def click_cost(self, docs: np.ndarray) -> np.ndarray:
        c = self.config
        return np.maximum(c.click_cost - c.quality_cost * self.quality[docs], c.min_cost)

    def click_prob(self, u: np.ndarray) -> np.ndarray:
        """``g(u)``: click probability of a shown document whose topic has preference ``u``."""
        return u / (u + 1.0) if self.config.click_model == "proportional" else u

    def _step(self, u: np.ndarray) -> np.ndarray:
        return self.config.drift_rate * (1.0 - np.abs(2.0 * u - 1.0)) * (1.0 - u)

    def drift(self, u: np.ndarray, q: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """Preferences for the clicked topics after the clicks (``u``, ``q``: one per click)."""
        c = self.config
        if c.drift == "quality":
            return np.clip(u + c.learning_rate * q, 0.0, 1.0)
        up = rng.random(len(u)) < u
        d = self._step(u)
        return np.clip(np.where(up, u + d, u - d), 0.0, 1.0)

    def expected_drift(self, u: np.ndarray, q: np.ndarray) -> np.ndarray:
        """``E[u']`` after a click (the Planner's mean-field rollout)."""
        c = self.config
        if c.drift == "quality":
            return np.clip(u + c.learning_rate * q, 0.0, 1.0)
        return np.clip(u + (2.0 * u - 1.0) * self._step(u), 0.0, 1.0)


@dataclass
class TopicUsers:
    """Mutable state of ``n`` users during one session (vectorised)."""

    u0: np.ndarray          # [n, m] observable initial preferences
    u: np.ndarray           # [n, m] hidden current preferences
    budget: np.ndarray      # [n]
    history: list[list[int]]  # clicked documents, initial ones first
    n_initial: int
    round: int = 0

    @classmethod
    def sample(cls, world: TopicWorld, n: int, rng: np.random.Generator) -> TopicUsers:
        u0 = rng.uniform(0.0, 1.0, size=(n, world.config.n_topics))
        return cls.start(world, u0, rng)

    @classmethod
    def start(cls, world: TopicWorld, u0: np.ndarray, rng: np.random.Generator) -> TopicUsers:
        """Users with profiles ``u0`` at the start of a session (fresh budget, initial history)."""
        c = world.config
        hist = []
        for row in u0:
            w = row[world.topic] + 1e-12
            hist.append(rng.choice(c.n_docs, size=c.initial_history, replace=True,
                                   p=w / w.sum()).tolist())
        return cls(u0.copy(), u0.copy(), np.full(len(u0), c.budget), hist, c.initial_history)

    @property
    def active(self) -> np.ndarray:
        return self.budget > 0

    def step(self, world: TopicWorld, docs: np.ndarray, rng: np.random.Generator):
        """Show ``docs[i]`` to user ``i``; returns (click probabilities, clicks), 0 if inactive."""
        c = world.config
        act = self.active
        t = world.topic[docs]
        p = np.where(act, world.click_prob(self.u[np.arange(len(docs)), t]), 0.0)
        clicks = rng.random(len(docs)) < p
        cost = np.where(clicks, world.click_cost(docs), c.skip_cost)
        self.budget = np.where(act, self.budget - cost, self.budget)
        rows = np.flatnonzero(clicks)
        self.u[rows, t[rows]] = world.drift(self.u[rows, t[rows]], world.quality[docs[rows]], rng)
        for i in rows:
            self.history[i].append(int(docs[i]))
        self.round += 1
        return p, clicks


def recall(world: TopicWorld, n: int, rng: np.random.Generator) -> np.ndarray:
    """``n_recall`` uniformly random documents for each of ``n`` users ``[n, n_recall]``."""
    return np.argsort(rng.random((n, world.config.n_docs)), axis=1)[:, : world.config.n_recall]


class UnbiasedTopicOracle:
    """Shows the candidate with the highest initial preference ``u^0_{t(d)}``."""

    name = "Unbiased Oracle"

    def select(self, world, users: TopicUsers, cands: np.ndarray, rng) -> np.ndarray:
        phi = np.take_along_axis(users.u0, world.topic[cands], axis=1)
        return cands[np.arange(len(cands)), np.argmax(phi, axis=1)]


class PlannerOracle:
    """Shows the candidate with the most expected clicks under a same-topic mean-field rollout."""

    name = "Planner Oracle"

    def select(self, world, users: TopicUsers, cands: np.ndarray, rng) -> np.ndarray:
        c = world.config
        n, k = cands.shape
        t = world.topic[cands]                       # [n, k]
        u = np.take_along_axis(users.u, t, axis=1)   # expected preference for the topic
        budget = np.repeat(users.budget[:, None], k, axis=1).astype(np.float64)
        q_first = world.quality[cands]
        q_mean = world.topic_mean[t]
        cost_mean = np.maximum(c.click_cost - c.quality_cost * q_mean, c.min_cost)
        total = np.zeros((n, k))
        for step in range(c.n_rounds - users.round):
            q = q_first if step == 0 else q_mean
            cost = world.click_cost(cands) if step == 0 else cost_mean
            alive = budget > 0
            pc = world.click_prob(u)
            total += np.where(alive, pc, 0.0)
            budget = np.where(alive, budget - pc * cost - (1 - pc) * c.skip_cost, budget)
            # a click (probability g(u)) moves the preference: E[u'] = g E[u' | click] + (1 - g) u
            u = np.where(alive, pc * world.expected_drift(u, q) + (1 - pc) * u, u)
        return cands[np.arange(n), np.argmax(total, axis=1)]
