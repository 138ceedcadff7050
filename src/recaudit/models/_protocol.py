"""The ``Recommender`` protocol every model in recaudit implements."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import numpy as np

from recaudit.data import Interactions, Queries, RankLists

__all__ = ["Recommender", "as_queries"]


@runtime_checkable
class Recommender(Protocol):
    """A model that can be trained on an interaction log and rank items for queries.

    - ``fit(train, *, seed)`` trains from scratch; all training randomness derives from
      ``seed`` (same data + same seed => bit-identical rank lists). Returns ``self``.
    - ``rank(queries, k=None)`` returns :class:`~recaudit.data.RankLists` with one row per
      query; ``k=None`` ranks the whole catalogue. ``queries`` is a
      :class:`~recaudit.data.Queries` batch or an :class:`~recaudit.data.Interactions` log
      (then each of its users is asked for their next item after their last interaction).
    """

    def fit(self, train: Interactions, *, seed: int) -> Recommender: ...

    def rank(self, queries: Queries | Interactions, k: int | None = None) -> RankLists: ...


def as_queries(queries: Queries | Interactions, max_len: int = 200) -> Queries:
    """Normalise the ``queries`` argument of :meth:`Recommender.rank`."""
    if isinstance(queries, Queries):
        return queries
    if isinstance(queries, Interactions):
        return Queries.next_item(queries, max_len=max_len)
    raise TypeError(f"queries must be Queries or Interactions, got {type(queries).__name__}")


def top_k_from_scores(scores: np.ndarray, k: int | None) -> RankLists:
    """Rank lists from a dense score matrix ``[n_queries, n_items]``.

    Items with score ``-inf`` are excluded (e.g. already-seen items); ties are broken by the
    lower item code so results are deterministic. ``k=None`` keeps every finite-score item
    (rows must then have the same number of finite scores).
    """
    n, m = scores.shape
    order = np.lexsort((np.broadcast_to(np.arange(m), (n, m)), -scores), axis=-1) \
        if n else np.zeros((0, m), dtype=np.int64)
    finite = np.isfinite(scores).sum(axis=1)
    depth = int(finite.min()) if n else 0
    if k is not None:
        depth = min(depth, k)
    items = order[:, :depth]
    return RankLists(items.astype(np.int32), np.take_along_axis(scores, items, axis=1))
