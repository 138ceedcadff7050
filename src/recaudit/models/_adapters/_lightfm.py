"""LightFM (``"lightfm"``; Kula 2015): hybrid factorisation with item attributes.

Adapter to the optional ``lightfm-next`` package (``pip install recaudit[lightfm]``; the original
``lightfm`` 1.17 no longer builds), imported only when the model is fitted. Every rating (or
every rating ``>= min_rating``) is a positive interaction; items are described by an identity
feature plus one feature per attribute label (genres), so items without any rating can still be
scored: the hybrid behaviour Shriver 2018 observes (NRTK(min) = 0 for LightFM, Table 3.4).

Scores are ``b_u + b_i + e_u . e_i`` from LightFM's user/item representations; they are
ranking scores, not ratings (``predict`` returns them as they are). Training uses
``num_threads=1`` and a ``RandomState`` derived from the seed, which makes it deterministic
(multi-threaded Hogwild updates are not).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
import scipy.sparse as sp

from recaudit.data import Interactions
from recaudit.errors import ConfigError
from recaudit.models._cf import RatingConfig, RatingRecommender
from recaudit.models._registry import register
from recaudit.seeds import derive_seed

__all__ = ["LightFM"]


@dataclass(frozen=True)
class LightFMConfig(RatingConfig):
    """LightFM options.

    no_components: embedding size (30). loss: ``"warp"``, ``"bpr"``, ``"logistic"`` or
    ``"warp-kos"``. epochs: training epochs. learning_rate: SGD step. item_alpha: L2 penalty
    of item features. user_alpha: L2 penalty of user features. min_rating: ratings below it
    are not positives (None: every rating is). use_attributes: describe items by their
    attribute labels too (the hybrid model).
    """

    no_components: int = 30
    loss: Literal["warp", "bpr", "logistic", "warp-kos"] = "warp"
    epochs: int = 20
    learning_rate: float = 0.05
    item_alpha: float = 0.0
    user_alpha: float = 0.0
    min_rating: float | None = None
    use_attributes: bool = True

    def validate(self) -> None:
        for key in ("no_components", "epochs"):
            if getattr(self, key) < 1:
                raise self.invalid(key, "must be a positive integer")


@register("lightfm")
class LightFM(RatingRecommender):
    """Hybrid LightFM recommender (optional dependency ``lightfm-next``)."""

    Config = LightFMConfig

    def fit(self, train: Interactions, *, seed: int) -> LightFM:
        self._attributes = train.item_attributes if self.config.use_attributes else None
        self._seed = int(seed)
        return super().fit(train, seed=seed)  # type: ignore[return-value]

    def _item_features(self, n_items: int) -> sp.csr_array:
        attrs = self._attributes or {}
        labels = sorted({a for v in attrs.values() for a in v})
        index = {a: n_items + j for j, a in enumerate(labels)}
        rows = list(range(n_items))
        cols = list(range(n_items))
        for item, v in attrs.items():
            for a in sorted(v):
                rows.append(item)
                cols.append(index[a])
        m = sp.csr_matrix((np.ones(len(rows), dtype=np.float32), (rows, cols)),
                          shape=(n_items, n_items + len(labels)))
        # LightFM's convention: each item's feature weights sum to 1
        norm = np.asarray(m.sum(axis=1)).ravel()
        return sp.csr_matrix(sp.diags(1.0 / norm) @ m, dtype=np.float32)

    def _fit(self, R: sp.csr_array, rng: np.random.Generator) -> None:
        try:
            from lightfm import LightFM as _LightFM
        except ImportError as exc:  # pragma: no cover - depends on the environment
            raise ConfigError("model 'lightfm' needs the optional package lightfm-next: "
                              "pip install 'recaudit[lightfm]'") from exc
        c = self.config
        coo = R.tocoo()
        keep = np.ones(len(coo.data), dtype=bool) if c.min_rating is None else (
            coo.data >= c.min_rating)
        inter = sp.coo_matrix((np.ones(int(keep.sum()), dtype=np.float32),
                               (coo.row[keep], coo.col[keep])), shape=R.shape)
        features = self._item_features(R.shape[1])
        state = np.random.RandomState(derive_seed("lightfm", self._seed) % (2 ** 32))
        model = _LightFM(no_components=c.no_components, loss=c.loss,
                         learning_rate=c.learning_rate, item_alpha=c.item_alpha,
                         user_alpha=c.user_alpha, random_state=state)
        model.fit(inter, item_features=features, epochs=c.epochs, num_threads=1)
        ib, ie = model.get_item_representations(features)
        ub, ue = model.get_user_representations()
        self.item_bias_, self.item_emb_ = ib.astype(np.float64), ie.astype(np.float64)
        self.user_bias_, self.user_emb_ = ub.astype(np.float64), ue.astype(np.float64)

    def _score_users(self, users: np.ndarray) -> np.ndarray:
        s = self.user_emb_[users] @ self.item_emb_.T
        s += self.item_bias_[None, :] + self.user_bias_[users, None]
        return s
