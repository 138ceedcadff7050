"""Ben Frederickson's ``implicit`` models as recaudit models (optional extra ``implicit``).

All learn from interaction counts ``C`` (users x items; repeated interactions add up):

- ``implicit-als``: weighted ALS (Hu, Koren & Volinsky 2008) on confidence ``alpha * C``;
  scores ``s(u, i) = x_u . y_i``;
- ``implicit-bpr``: Bayesian Personalised Ranking (Rendle et al. 2009) by SGD on sampled
  (user, seen item, unseen item) triples; scores ``x_u . y_i + b_i`` (the item bias is an
  extra factor column that implicit stores inside the item factors);
- ``implicit-item-knn``: ``CosineRecommender``, the top-``K`` cosine neighbours of each item;
  scores ``s(u, i) = sum_j C_uj sim(j, i)`` (items with no neighbour among ``u``'s are
  unscorable).

Determinism: the CPU classes are used explicitly (implicit otherwise picks its GPU backend when
CUDA exists, so results would depend on the machine), with ``num_threads=1`` (BPR's Hogwild
updates and ALS's parallel solves are not reproducible otherwise) and BLAS limited to one
thread during training and scoring; ``random_state`` is a seed derived from the trial's seed.
Same data + same seed => bit-identical rank lists.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from recaudit.models._adapters._library import AdapterConfig, LibraryAdapter, require, single_threaded
from recaudit.models._registry import register

__all__ = ["ImplicitALS", "ImplicitBPR", "ImplicitItemKNN"]


@dataclass(frozen=True)
class ImplicitALSConfig(AdapterConfig):
    """implicit's ``AlternatingLeastSquares`` options.

    factors: latent factors. regularization: L2 regularisation of the factors. alpha: the
    confidence scale (confidence ``1 + alpha * C``). iterations: ALS sweeps.
    """

    factors: int = 64
    regularization: float = 0.01
    alpha: float = 1.0
    iterations: int = 15


@dataclass(frozen=True)
class ImplicitBPRConfig(AdapterConfig):
    """implicit's ``BayesianPersonalizedRanking`` options.

    factors: latent factors. learning_rate: SGD step size. regularization: L2 regularisation.
    iterations: epochs of sampled (user, seen item, unseen item) triples.
    """

    factors: int = 64
    learning_rate: float = 0.01
    regularization: float = 0.01
    iterations: int = 100


@dataclass(frozen=True)
class ImplicitItemKNNConfig(AdapterConfig):
    """implicit's ``CosineRecommender`` options.

    K: neighbours kept per item.
    """

    K: int = 20


class _ImplicitModel(LibraryAdapter):
    feedback = "implicit"

    def _seed(self, rng: np.random.Generator) -> int:
        return int(rng.integers(2 ** 31 - 1))

    def _score_users(self, users: np.ndarray) -> np.ndarray:
        with single_threaded():
            s = self.user_factors_[users] @ self.item_factors_.T
        out = s.astype(np.float64)
        out[:, ~self.trained_items_] = np.nan  # factors of items never seen are noise
        return out

    def _factors(self, model, R: sp.csr_array) -> None:
        self.user_factors_ = np.asarray(model.user_factors, dtype=np.float32)
        self.item_factors_ = np.asarray(model.item_factors, dtype=np.float32)
        self.trained_items_ = np.bincount(R.indices, minlength=R.shape[1]) > 0


@register("implicit-als")
class ImplicitALS(_ImplicitModel):
    """implicit's weighted ALS (CPU, one thread), optional extra ``implicit``."""

    Config = ImplicitALSConfig

    def _fit(self, R: sp.csr_array, rng: np.random.Generator) -> None:
        require("implicit", "implicit", self.registered_name)
        from implicit.cpu.als import AlternatingLeastSquares

        c = self.config
        with single_threaded():  # implicit checks the BLAS threads when it builds the model
            model = AlternatingLeastSquares(factors=c.factors, regularization=c.regularization,
                                            alpha=c.alpha, iterations=c.iterations,
                                            num_threads=1, random_state=self._seed(rng))
            model.fit(sp.csr_matrix(R, dtype=np.float32), show_progress=False)
        self._factors(model, R)


@register("implicit-bpr")
class ImplicitBPR(_ImplicitModel):
    """implicit's BPR (CPU, one thread), optional extra ``implicit``."""

    Config = ImplicitBPRConfig

    def _fit(self, R: sp.csr_array, rng: np.random.Generator) -> None:
        require("implicit", "implicit", self.registered_name)
        from implicit.cpu.bpr import BayesianPersonalizedRanking

        c = self.config
        with single_threaded():
            model = BayesianPersonalizedRanking(
                factors=c.factors, learning_rate=c.learning_rate,
                regularization=c.regularization, iterations=c.iterations, num_threads=1,
                random_state=self._seed(rng))
            model.fit(sp.csr_matrix(R, dtype=np.float32), show_progress=False)
        self._factors(model, R)


@register("implicit-item-knn")
class ImplicitItemKNN(_ImplicitModel):
    """implicit's CosineRecommender (item kNN), optional extra ``implicit``."""

    Config = ImplicitItemKNNConfig

    def _fit(self, R: sp.csr_array, rng: np.random.Generator) -> None:
        require("implicit", "implicit", self.registered_name)
        from implicit.nearest_neighbours import CosineRecommender

        from implicit.utils import ParameterWarning

        model = CosineRecommender(K=self.config.K, num_threads=1)
        with warnings.catch_warnings():  # implicit converts its own normalised matrix to CSR
            warnings.simplefilter("ignore", ParameterWarning)
            model.fit(sp.csr_matrix(R, dtype=np.float64), show_progress=False)
        self.similarity_ = sp.csr_array(model.similarity)  # items x items

    def _score_users(self, users: np.ndarray) -> np.ndarray:
        counts = self.R_[users]
        s = (counts @ self.similarity_).toarray()
        reach = ((counts > 0).astype(np.float64) @ (self.similarity_ != 0)).toarray() > 0
        return np.where(reach, s, np.nan)
