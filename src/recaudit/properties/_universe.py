"""The recommender "universe" of Shriver 2018 §3.1 and a small vectorised query API over it.

A universe holds users ``U`` (codes ``0..n_users-1``), items ``I``, the dataset's partial
``rating: U x I -> R``, item attributes ``attr: I -> 2^A`` and the recommender's partial
``rank: I x U -> [1, k]``, stored as an ``int32 [n_users, depth]`` matrix of item codes, best
first, ``-1`` meaning "no item at this position" (a user with ``k_u < depth`` ranked items has
``-1`` in the trailing slots: ``rank(i, u) = ⊥`` for every other item).

The query API mirrors the thesis' (Figures 3.3-3.7) but every step is a numpy operation on
whole columns, never a Python loop over users or items::

    u.ranks(k).count_per_user().agg("min")                  # NRANKS(min)
    u.ranks(k).where(lambda r: r.position == 1).items().count()   # NTRI
    u.ranks(k).lists().n                                    # NRL
    u.ranks(k).items().rating_mean().agg("median")          # ARTK(median)

``where`` takes a boolean mask or a function of the current selection returning one.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = ["AGGREGATES", "Groups", "Items", "Ranks", "Universe", "Values"]

#: The aggregation functions ``f`` of the templates.
AGGREGATES = ("min", "median", "max", "count", "avg")


@dataclass(frozen=True)
class Values:
    """A multiset of numbers (one per user, item, ...) that ``f`` aggregates.

    ``agg(f)``: ``min``, ``median``, ``max``, ``avg`` (arithmetic mean) ignore ``NaN`` entries
    (e.g. the average rating of an item without ratings is undefined); ``count`` (the
    thesis' ``#``) is the number of defined entries. An aggregate of an empty multiset is
    ``NaN`` (and ``0`` for ``count``).
    """

    values: np.ndarray

    def agg(self, f: str) -> float:
        if f not in AGGREGATES:
            raise ValueError(f"unknown aggregate {f!r}; choose one of {', '.join(AGGREGATES)}")
        v = self.values[~np.isnan(self.values)] if self.values.dtype.kind == "f" else self.values
        if f == "count":
            return float(len(v))
        if len(v) == 0:
            return float("nan")
        fns: dict[str, Callable[..., Any]] = {"min": np.min, "max": np.max,
                                              "median": np.median, "avg": np.mean}
        fn = fns[f]
        return float(fn(v))

    def __len__(self) -> int:
        return len(self.values)


@dataclass(frozen=True)
class Groups:
    """Users partitioned by their (ordered list | set of) top-k items.

    ``n``: number of distinct lists; ``sizes``: users per distinct list; ``size_per_user``:
    for every user, how many users (themselves included) received the same list.
    """

    inverse: np.ndarray
    sizes: np.ndarray

    @property
    def n(self) -> int:
        return len(self.sizes)

    def size_per_user(self) -> Values:
        return Values(self.sizes[self.inverse].astype(np.float64))

    def shared(self, min_users: int = 2) -> int:
        """Distinct lists received by at least ``min_users`` users."""
        return int((self.sizes >= min_users).sum())


class Items:
    """A set of item codes of a universe."""

    def __init__(self, universe: Universe, codes: np.ndarray) -> None:
        self.universe = universe
        self.codes = np.unique(np.asarray(codes, dtype=np.int64))

    def count(self) -> int:
        return len(self.codes)

    def where(self, pred: np.ndarray | Callable[[Items], np.ndarray]) -> Items:
        mask = pred(self) if callable(pred) else pred
        return Items(self.universe, self.codes[np.asarray(mask, dtype=bool)])

    def with_attribute(self, a: str) -> Items:
        col = self.universe.attribute_index(a)
        A = self.universe.attribute_matrix
        return self.where(A[self.codes, col] if len(self.codes) else np.zeros(0, bool))

    def rating_mean(self) -> Values:
        return Values(self.universe.item_rating_mean[self.codes])

    def rating_count(self) -> Values:
        return Values(self.universe.item_rating_count[self.codes].astype(np.float64))

    def attribute_counts(self) -> dict[str, int]:
        """``{a: #{i in self | a in attr(i)}}`` for every attribute of the universe."""
        counts = self.universe.attribute_matrix[self.codes].sum(axis=0)
        return dict(zip(self.universe.attribute_names, (int(c) for c in counts), strict=True))

    def attributes(self) -> frozenset[str]:
        return frozenset(a for a, c in self.attribute_counts().items() if c > 0)


class Ranks:
    """A selection of rank entries ``(user, item, position)``, positions starting at 1."""

    def __init__(self, universe: Universe, user: np.ndarray, item: np.ndarray,
                 position: np.ndarray) -> None:
        self.universe, self.user, self.item, self.position = universe, user, item, position

    def __len__(self) -> int:
        return len(self.user)

    def where(self, pred: np.ndarray | Callable[[Ranks], np.ndarray]) -> Ranks:
        mask = np.asarray(pred(self) if callable(pred) else pred, dtype=bool)
        return Ranks(self.universe, self.user[mask], self.item[mask], self.position[mask])

    def items(self) -> Items:
        return Items(self.universe, self.item)

    def users(self) -> np.ndarray:
        return np.unique(self.user)

    def count_per_user(self) -> Values:
        """``#{i | rank(i, u) selected}`` for *every* user of the universe (zeros included)."""
        return Values(np.bincount(self.user, minlength=self.universe.n_users).astype(np.float64))

    def count_per_item(self) -> Values:
        """``#{u | rank(i, u) selected}`` for *every* item of the universe (zeros included)."""
        return Values(np.bincount(self.item, minlength=self.universe.n_items).astype(np.float64))

    def matrix(self) -> np.ndarray:
        """Selected entries back as an ``[n_users, max position]`` matrix, ``-1`` elsewhere."""
        depth = int(self.position.max()) if len(self.position) else 0
        m = np.full((self.universe.n_users, depth), -1, dtype=np.int32)
        m[self.user, self.position - 1] = self.item
        return m

    def lists(self, ordered: bool = True) -> Groups:
        """Group users by their selected ranked list (``ordered``) or set of items.

        A user with no selected entry has the empty list, which counts as one list (the
        set-builder of NRL/NRS ranges over all users).
        """
        m = self.matrix()
        if not ordered:
            m = np.sort(m, axis=1)
        if m.shape[1] == 0:
            n = self.universe.n_users
            return Groups(np.zeros(n, dtype=np.int64), np.array([n] if n else [], dtype=np.int64))
        rows = np.ascontiguousarray(m).view(np.dtype((np.void, m.dtype.itemsize * m.shape[1])))
        _, inverse, counts = np.unique(rows.ravel(), return_inverse=True, return_counts=True)
        return Groups(inverse.ravel(), counts)


@dataclass(frozen=True, eq=False)
class Universe:
    """Users, items, ratings, attributes and the top-``depth`` ranking of one recommender.

    Build with :meth:`from_log` (an :class:`~recaudit.data.Interactions` with ratings and the
    ``[n_users, depth]`` matrix of recommended item codes, ``-1`` = no item).
    """

    ranking: np.ndarray
    n_items: int
    rating_user: np.ndarray
    rating_item: np.ndarray
    rating_value: np.ndarray
    item_attributes: Mapping[int, frozenset[str]] | None = None
    item_noun: str = "items"
    _cache: dict = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        r = np.asarray(self.ranking)
        if r.ndim != 2:
            raise ValueError(f"ranking must be a 2-D [n_users, depth] array, got shape {r.shape}")
        if r.size and (r.min() < -1 or r.max() >= self.n_items):
            raise ValueError(f"ranking holds codes outside [-1, {self.n_items})")
        valid = r >= 0
        if r.shape[1] > 1 and np.any(valid[:, 1:] & ~valid[:, :-1]):
            raise ValueError("ranking rows must put -1 (no item) only after the ranked items")
        s = np.sort(np.where(valid, r, -1 - np.arange(r.shape[1])), axis=1)
        if r.shape[1] > 1 and np.any(s[:, 1:] == s[:, :-1]):
            raise ValueError("an item appears twice in one user's ranking")
        object.__setattr__(self, "ranking", r.astype(np.int32, copy=False))

    @classmethod
    def from_log(cls, log: Any, ranking: np.ndarray, *, users: np.ndarray | None = None,
                 item_noun: str = "items") -> Universe:
        """Universe of ``log``'s ratings and attributes with ``ranking`` (row ``j`` = user
        ``users[j]``; all ``log.n_users`` users in code order when ``users`` is None)."""
        if log.rating is None:
            raise ValueError("the universe needs a log with ratings (rating(u, i))")
        ranking = np.asarray(ranking)
        n = log.n_users if users is None else len(users)
        if ranking.shape[0] != n:
            raise ValueError(f"ranking has {ranking.shape[0]} rows for {n} users")
        return cls(ranking, log.n_items, log.user, log.item, log.rating.astype(np.float64),
                   log.item_attributes, item_noun)

    # ------------------------------------------------------------------ basic sets
    @property
    def n_users(self) -> int:
        return self.ranking.shape[0]

    @property
    def depth(self) -> int:
        return self.ranking.shape[1]

    def ranks(self, k: int | None = None) -> Ranks:
        """All entries with ``rank(i, u) <= k`` (every entry when ``k`` is None)."""
        if k is not None and (not isinstance(k, (int, np.integer)) or k < 1):
            raise ValueError(f"k must be a positive integer, got {k!r}")
        if k is not None and k > self.depth:
            raise ValueError(f"k={k} exceeds the depth {self.depth} of the stored rankings; "
                             "recompute the recommendations with a larger k")
        m = self.ranking if k is None else self.ranking[:, :k]
        user, col = np.nonzero(m >= 0)
        return Ranks(self, user, m[user, col].astype(np.int64), col + 1)

    def items(self) -> Items:
        return Items(self, np.arange(self.n_items))

    # ------------------------------------------------------------------ derived (cached)
    @property
    def item_rating_count(self) -> np.ndarray:
        if "count" not in self._cache:
            self._cache["count"] = np.bincount(self.rating_item, minlength=self.n_items)
        return self._cache["count"]

    @property
    def item_rating_mean(self) -> np.ndarray:
        """``avg{rating(u, i) | u}`` per item; ``NaN`` for items nobody rated."""
        if "mean" not in self._cache:
            s = np.bincount(self.rating_item, weights=self.rating_value, minlength=self.n_items)
            c = self.item_rating_count
            self._cache["mean"] = np.divide(s, c, out=np.full(self.n_items, np.nan), where=c > 0)
        return self._cache["mean"]

    @property
    def attribute_names(self) -> list[str]:
        self._attributes()
        return self._cache["names"]

    @property
    def attribute_matrix(self) -> np.ndarray:
        """Boolean ``[n_items, n_attributes]`` incidence of ``attr``."""
        self._attributes()
        return self._cache["A"]

    def attribute_index(self, a: str) -> int:
        names = self.attribute_names
        try:
            return names.index(a)
        except ValueError:
            from recaudit.errors import did_you_mean

            raise ValueError(f"unknown item attribute {a!r}.{did_you_mean(a, names)}") from None

    def _attributes(self) -> None:
        if "A" in self._cache:
            return
        attrs = self.item_attributes or {}
        names = sorted({a for v in attrs.values() for a in v})
        idx = {a: j for j, a in enumerate(names)}
        A = np.zeros((self.n_items, len(names)), dtype=bool)
        pairs = [(i, idx[a]) for i, v in attrs.items() for a in v]
        if pairs:
            rows, cols = np.array(pairs).T
            A[rows, cols] = True
        self._cache["names"], self._cache["A"] = names, A
