"""LensKit's scorers as recaudit models (optional extra ``lenskit``, pinned to 2025.8.1).

- ``lenskit-item-knn``: ``ItemKNNScorer`` (explicit: item-mean-centred cosine; Deshpande &
  Karypis 2004 / Sarwar et al. 2001), scored from the user's training ratings;
- ``lenskit-user-knn``: ``UserKNNScorer`` (user-mean-centred cosine; Resnick et al. 1994);
- ``lenskit-biased-mf``: ``BiasedMFScorer``, explicit-feedback matrix factorisation by ALS
  with damped biases;
- ``lenskit-implicit-mf``: ``ImplicitMFScorer``, Hu, Koren & Volinsky's weighted ALS on
  interaction counts (``weight`` is their confidence scale).

Training goes through LensKit's own ``Dataset`` built from the training log with recaudit's
integer codes as ids, so scores index straight into the catalogue; items LensKit never saw
(no training interaction) are unscorable and follow the fallback order of
:class:`~recaudit.models._cf._base.RatingRecommender`. Randomness: ``TrainingOptions(rng=)``
gets a seed derived from the trial's seed (SPEC 7), nothing global. Scoring calls the trained
scorer once per user in this process (never LensKit's batch API, which spawns workers).
Training and scoring run on one thread (:func:`single_threaded`), which also undoes the
thread counts LensKit's one-time parallel setup imposes on the whole process.

LensKit computes in float32; recaudit's built-in ``item-item``/``user-user`` in float64
(see ``tests/models_cf/test_lenskit_crosscheck.py`` for the measured agreement).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from recaudit.errors import ConfigError
from recaudit.models._adapters._library import AdapterConfig, LibraryAdapter, require, single_threaded
from recaudit.models._registry import register
from recaudit.seeds import derive_seed

__all__ = ["LensKitItemKNN", "LensKitUserKNN", "LensKitBiasedMF", "LensKitImplicitMF"]


@dataclass(frozen=True)
class LensKitKNNConfig(AdapterConfig):
    """LensKit's neighbourhood settings (``ItemKNNConfig``/``UserKNNConfig``).

    max_nbrs: most neighbours used per score. min_nbrs: fewest neighbours for a score.
    min_sim: smallest similarity of a neighbour.
    """

    max_nbrs: int = 20
    min_nbrs: int = 1
    min_sim: float = 1e-6


@dataclass(frozen=True)
class LensKitBiasedMFConfig(AdapterConfig):
    """LensKit's ``BiasedMFConfig``.

    embedding_size: latent factors. epochs: ALS sweeps. regularization: L2 regularisation.
    damping: damping of the user and item biases.
    """

    embedding_size: int = 50
    epochs: int = 10
    regularization: float = 0.1
    damping: float = 5.0


@dataclass(frozen=True)
class LensKitImplicitMFConfig(AdapterConfig):
    """LensKit's ``ImplicitMFConfig``.

    embedding_size: latent factors. epochs: ALS sweeps. regularization: L2 regularisation.
    weight: the confidence scale of interaction counts.
    """

    embedding_size: int = 50
    epochs: int = 10
    regularization: float = 0.1
    weight: float = 40.0


def _lenskit_setup() -> None:
    from lenskit.parallel import ensure_parallel_init

    ensure_parallel_init()


class _LensKitScorer(LibraryAdapter):
    """Base: builds the LensKit dataset, trains ``_scorer()``, scores user by user."""

    uses_history = False  # kNN scorers read the user's ratings from the query

    def _scorer(self):  # pragma: no cover - abstract
        raise NotImplementedError

    def _fit(self, R: sp.csr_array, rng: np.random.Generator) -> None:
        require("lenskit", "lenskit", self.registered_name)
        import pandas as pd
        from lenskit.data import from_interactions_df
        from lenskit.training import TrainingOptions

        coo = R.tocoo()
        frame = pd.DataFrame({"user_id": coo.row.astype(np.int64),
                              "item_id": coo.col.astype(np.int64)})
        if self.feedback == "explicit":
            frame["rating"] = coo.data
        try:
            scorer = self._scorer()
        except ValueError as exc:  # pydantic's ValidationError
            raise ConfigError(f"{self.registered_name}: {exc}") from exc
        seed = derive_seed("lenskit", self.registered_name, int(rng.integers(2 ** 63)))
        with single_threaded(_lenskit_setup):
            scorer.train(from_interactions_df(frame), TrainingOptions(rng=seed))
        self.scorer_ = scorer

    def _score_users(self, users: np.ndarray) -> np.ndarray:
        from lenskit.data import ItemList

        items = ItemList(item_ids=np.arange(self.n_items_, dtype=np.int64))
        out = np.full((len(users), self.n_items_), np.nan)
        with single_threaded(_lenskit_setup):
            self._score_into(out, users, items)
        return out

    def _score_into(self, out: np.ndarray, users: np.ndarray, items) -> None:
        from lenskit.data import ItemList, RecQuery

        for j, u in enumerate(users.tolist()):
            row = self.R_[[u]]
            hist = None
            if self.uses_history:
                hist = ItemList(item_ids=row.indices.astype(np.int64),
                                rating=row.data if self.feedback == "explicit" else None)
            if self.uses_history and len(row.indices) == 0:
                continue
            query = RecQuery(user_id=int(u), history_items=hist)
            out[j] = self.scorer_(query, items).scores("numpy")


@register("lenskit-item-knn")
class LensKitItemKNN(_LensKitScorer):
    """LensKit's ItemKNNScorer (explicit ratings), optional extra ``lenskit``."""

    Config = LensKitKNNConfig
    uses_history = True

    def _scorer(self):
        from lenskit.knn import ItemKNNScorer

        c = self.config
        return ItemKNNScorer(max_nbrs=c.max_nbrs, min_nbrs=c.min_nbrs, min_sim=c.min_sim,
                             feedback="explicit")


@register("lenskit-user-knn")
class LensKitUserKNN(_LensKitScorer):
    """LensKit's UserKNNScorer (explicit ratings), optional extra ``lenskit``."""

    Config = LensKitKNNConfig
    uses_history = True

    def _scorer(self):
        from lenskit.knn import UserKNNScorer

        c = self.config
        return UserKNNScorer(max_nbrs=c.max_nbrs, min_nbrs=c.min_nbrs, min_sim=c.min_sim,
                             feedback="explicit")


@register("lenskit-biased-mf")
class LensKitBiasedMF(_LensKitScorer):
    """LensKit's BiasedMFScorer (explicit ALS), optional extra ``lenskit``."""

    Config = LensKitBiasedMFConfig

    def _scorer(self):
        from lenskit.als import BiasedMFScorer

        c = self.config
        return BiasedMFScorer(embedding_size=c.embedding_size, epochs=c.epochs,
                              regularization=c.regularization, damping=c.damping)


@register("lenskit-implicit-mf")
class LensKitImplicitMF(_LensKitScorer):
    """LensKit's ImplicitMFScorer (weighted ALS on counts), optional extra ``lenskit``."""

    Config = LensKitImplicitMFConfig
    feedback = "implicit"

    def _scorer(self):
        from lenskit.als import ImplicitMFScorer

        c = self.config
        return ImplicitMFScorer(embedding_size=c.embedding_size, epochs=c.epochs,
                                regularization=c.regularization, weight=c.weight)
