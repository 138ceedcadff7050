"""Rank lists: what a recommender answers to a batch of queries."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["RankLists"]


@dataclass(frozen=True, eq=False)
class RankLists:
    """Immutable rank lists, one row per query, best item first.

    Attributes
    ----------
    items:
        ``int32`` array ``[n_queries, depth]`` of item codes. Every row has ``depth`` distinct
        valid codes: padding never appears (``depth`` is ``k``, or the number of candidate items
        when rankings cover the whole catalogue).
    scores:
        Optional ``float32`` array of the same shape, non-increasing along each row.

    Both are copies of what is given, read-only, except an array of the right type that owns
    its data and is already read-only: nobody can change it, so it is kept as it is (the lists
    a model builds for a large catalogue are not held twice).
    """

    items: np.ndarray
    scores: np.ndarray | None = None

    def __post_init__(self) -> None:
        items = _frozen(self.items, np.int32)
        if items.ndim != 2:
            raise ValueError(f"RankLists.items must be 2-D [n_queries, depth], got {items.shape}")
        object.__setattr__(self, "items", items)
        if self.scores is not None:
            scores = _frozen(self.scores, np.float32)
            if scores.shape != items.shape:
                raise ValueError(f"scores shape {scores.shape} != items shape {items.shape}")
            object.__setattr__(self, "scores", scores)

    def __len__(self) -> int:
        return self.items.shape[0]

    @property
    def depth(self) -> int:
        return self.items.shape[1]

    def top(self, k: int) -> RankLists:
        """The first ``k`` positions of every list."""
        if k < 1:
            raise ValueError(f"k must be >= 1, got {k}")
        return RankLists(self.items[:, :k], None if self.scores is None else self.scores[:, :k])

    def equals(self, other: RankLists) -> bool:
        """Bit-identical items (and scores when both have them)."""
        if self.items.shape != other.items.shape or not np.array_equal(self.items, other.items):
            return False
        if self.scores is not None and other.scores is not None:
            return self.scores.tobytes() == other.scores.tobytes()
        return True


def _frozen(values: object, dtype: type) -> np.ndarray:
    """``values`` as a read-only ``dtype`` array: as given when it already is one that owns its
    data, else a copy."""
    if (isinstance(values, np.ndarray) and values.dtype == dtype and values.base is None
            and not values.flags.writeable):
        return values
    out: np.ndarray = np.array(values, dtype=dtype, copy=True)
    out.flags.writeable = False
    return out
