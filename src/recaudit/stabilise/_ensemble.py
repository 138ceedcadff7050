"""Seed ensembles: the average of ``n`` models trained with different seeds (Francomano,
Siciliano & Silvestri 2024, "Robust Solutions for Ranking Variability in Recommender Systems",
RobustRecSys 2024: averaging the outputs of models that differ only in their initialisation
raised FRBO@10 between runs by about 31 % at unchanged NDCG).

Member ``i`` of the ensemble fitted with seed ``s`` is trained with seed ``s`` for ``i = 0``
and ``derive_seed(s, "ensemble", i)`` otherwise, so a one-member ensemble is the plain model
(same lists, bit for bit) and the members of the ensembles of an audit's unperturbed and
perturbed models are paired seed by seed. Scores (``combine``):

    "scores":   S(q, v) = 1/n Σ_i s_i(q, v)                       (the members' raw scores)
    "softmax":  S(q, v) = 1/n Σ_i exp(s_i(q, v)) / Σ_w exp(s_i(q, w))   (a mixture of their
                next-item distributions, for softmax-trained models)

accumulated in float64 in member order; lists as the members' ``rank`` (ties to the lower
item code, ``exclude_seen`` honoured). Any model with ``score(queries)`` can be a member.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from collections.abc import Callable, Mapping
from typing import Any, Literal

import numpy as np

from recaudit.config import Config
from recaudit.data import Interactions, Queries, RankLists
from recaudit.errors import ConfigError
from recaudit.models import as_queries, top_k_from_scores
from recaudit.seeds import derive_seed
from recaudit.stabilise._protocol import maker, register_method
from recaudit.stabilise._protocol import options as _options

__all__ = ["EnsembleConfig", "SeedEnsemble", "member_seed"]


@dataclass(frozen=True)
class EnsembleConfig(Config):
    """Seed-ensemble options (Francomano et al. 2024). n: members (5). combine: ``"scores"``
    (mean of the raw scores) or ``"softmax"`` (mean of the members' softmax distributions)."""

    n: int = 5
    combine: Literal["scores", "softmax"] = "scores"

    def validate(self) -> None:
        if self.n < 1:
            raise self.invalid("n", f"must be >= 1, got {self.n}")


def member_seed(seed: int, i: int) -> int:
    """Training seed of member ``i`` of an ensemble fitted with ``seed``."""
    return int(seed) if i == 0 else derive_seed(int(seed), "ensemble", i)


class SeedEnsemble:
    """``n`` copies of a model trained with different seeds, scores averaged (module
    docstring). After ``fit``: ``members``, ``timing_`` (wall and CPU seconds of training)."""

    uses_anchor = False

    def __init__(self, model: str | Callable[[], Any], params: Mapping[str, Any] | None = None,
                 stabilise: EnsembleConfig | Mapping[str, Any] | None = None, **options: Any
                 ) -> None:
        config = _options(EnsembleConfig, "ensemble", stabilise, options)
        make = maker(model, params)
        self.members = [make() for _ in range(config.n)]
        first = self.members[0]
        if not callable(getattr(first, "score", None)):
            name = getattr(first, "registered_name", type(first).__name__)
            raise ConfigError(f"stabilise.method = 'ensemble' averages scores; model {name!r} "
                              "has no score(queries)", key="method")
        self.config = config
        self.registered_name = f"{getattr(first, 'registered_name', 'model')}+ensemble"

    def get_params(self) -> dict[str, Any]:
        first = self.members[0]
        return {"model": getattr(first, "registered_name", type(first).__name__),
                "params": first.get_params(),
                "stabilise": {"method": "ensemble", **self.config.to_dict()}}

    def __repr__(self) -> str:
        return f"SeedEnsemble({self.members[0]!r}, n={self.config.n})"

    def fit(self, train: Interactions, *, seed: int) -> SeedEnsemble:
        if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
            raise TypeError(f"seed must be an int, got {type(seed).__name__}")
        t0, c0 = time.perf_counter(), time.process_time()
        for i, m in enumerate(self.members):
            m.fit(train, seed=member_seed(int(seed), i))
        self.timing_ = {"fit_seconds": time.perf_counter() - t0,
                        "fit_cpu_seconds": time.process_time() - c0}
        return self

    def score(self, queries: Queries | Interactions) -> np.ndarray:
        """Mean member score ``[n_queries, n_items]`` (float64)."""
        total: np.ndarray | None = None
        for m in self.members:
            s = np.asarray(m.score(queries), dtype=np.float64)
            if self.config.combine == "softmax":
                s = np.exp(s - s.max(axis=1, keepdims=True))
                s /= s.sum(axis=1, keepdims=True)
            total = s if total is None else total + s
        assert total is not None
        return total / len(self.members)

    def rank(self, queries: Queries | Interactions, k: int | None = None) -> RankLists:
        if k is not None and (isinstance(k, bool) or not isinstance(k, (int, np.integer))
                              or k < 1):
            raise ValueError(f"k must be None or an integer >= 1, got {k!r}")
        scores = self.score(queries)
        cfg = getattr(self.members[0], "config", None)
        if getattr(cfg, "exclude_seen", False):
            q = as_queries(queries, max_len=getattr(cfg, "max_len", 200))
            scores[np.repeat(np.arange(len(q)), q.lengths()), q.context_item] = -np.inf
        return top_k_from_scores(scores, k)


register_method("ensemble", EnsembleConfig,
                lambda make, config: SeedEnsemble(make, stabilise=config),
                summary="mean scores of models trained with n seeds "
                        "(Francomano, Siciliano & Silvestri 2024)")
