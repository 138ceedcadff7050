"""The synthetic topic / quality / time-budget sequential scenario (Zhu et al. 2023, §5.3).

World: ``m`` topics with ``docs_per_topic`` documents each; document ``d`` has a topic ``t(d)``
(observable, one-hot) and a hidden quality ``q_d ~ N(mu_{t(d)}, quality_sd^2)``; the topic means
``mu`` are evenly spaced in ``[-1, 1]`` and assigned to topics in a random order.

User: observable profile ``u^0 ~ U(0, 1)^m`` (initial topic preferences), hidden current
preferences ``u^r``, hidden time budget ``B`` (``budget`` at the start) and a click history that
starts with ``initial_history`` documents drawn with probability proportional to ``u^0_{t(d)}``.

Round ``r`` (at most ``n_rounds``): ``n_recall`` documents are recalled uniformly at random, the
policy shows one of them, ``d``; the user (if ``B > 0``) clicks with probability
``M(u^{r-1}, d, {d}) = u^{r-1}_{t(d)}``. A click costs ``max(click_cost - quality_cost q_d,
min_cost)`` of the budget and moves the preference ``u_{t(d)} <- clip(u_{t(d)} + learning_rate q_d,
0, 1)`` (good documents make a topic more liked, bad ones less); a skip costs ``skip_cost``. Users
with ``B <= 0`` have left and count as no clicks (as in the paper's Fig. 10).

So the initial preference score of ``d`` is ``phi(d) = u^0_{t(d)}``; with ``favourite_k =
docs_per_topic`` the favourite set (Def. 4.2) is the documents of the user's favourite topic.
The paper gives the structure (m = 10, 10 documents per topic, 1 of 10 recalled shown, 20 rounds,
Gaussian quality by topic, budget consumed by quality) but not the constants; ours are stated
here and in :class:`TopicConfig`.

Oracles: the **Unbiased Oracle** shows the candidate with the highest ``phi`` (ties: candidate
order); the **Planner Oracle** scores each candidate by the expected cumulative clicks if it and
then documents of its topic with the topic's mean quality were shown in every remaining round,
computed by a mean-field (expected-value) rollout of the dynamics above from the user's true state.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["TopicConfig", "TopicWorld", "TopicUsers", "UnbiasedTopicOracle", "PlannerOracle",
           "recall"]


@dataclass(frozen=True)
class TopicConfig:
    """Constants of the sequential scenario (see the module docstring)."""

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
    initial_history: int = 3
    favourite_k: int | None = None  # None = docs_per_topic

    def __post_init__(self) -> None:
        for name in ("n_topics", "docs_per_topic", "n_recall", "n_rounds"):
            if getattr(self, name) < 1:
                raise ValueError(f"TopicConfig.{name} must be >= 1; got {getattr(self, name)}")
        if self.n_recall > self.n_topics * self.docs_per_topic:
            raise ValueError(f"TopicConfig.n_recall ({self.n_recall}) exceeds the number of "
                             f"documents ({self.n_topics * self.docs_per_topic})")
        if self.budget <= 0 or self.min_cost <= 0 or self.skip_cost <= 0:
            raise ValueError("TopicConfig.budget, min_cost and skip_cost must be > 0")
        if self.initial_history < 0:
            raise ValueError("TopicConfig.initial_history must be >= 0")

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
        p = np.where(act, self.u[np.arange(len(docs)), t], 0.0)
        clicks = rng.random(len(docs)) < p
        cost = np.where(clicks, world.click_cost(docs), c.skip_cost)
        self.budget = np.where(act, self.budget - cost, self.budget)
        rows = np.flatnonzero(clicks)
        self.u[rows, t[rows]] = np.clip(
            self.u[rows, t[rows]] + c.learning_rate * world.quality[docs[rows]], 0.0, 1.0)
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
            total += np.where(alive, u, 0.0)
            budget = np.where(alive, budget - u * cost - (1 - u) * c.skip_cost, budget)
            u = np.where(alive, np.clip(u + u * c.learning_rate * q, 0.0, 1.0), u)
        return cands[np.arange(n), np.argmax(total, axis=1)]
