"""The ``Recommender`` protocol every model in recaudit implements."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol, runtime_checkable

import numpy as np

from recaudit.data import Interactions, Queries, RankLists
from recaudit.errors import ModelError

__all__ = ["Recommender", "SupportsWarmStart", "as_queries", "checked_fit", "checked_rank",
           "rank_chunks", "top_k_from_scores", "warm_startable"]


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


@runtime_checkable
class SupportsWarmStart(Protocol):
    """A model that can start from another fit's state: a warm start (a retrain that
    fine-tunes the deployed model on the new data instead of training from scratch).

    ``warm_start(previous, train, *, new_from, seed, epochs, lr)`` makes this (fresh) model a
    copy of ``previous`` — a fitted model of the same class and parameters, trained on an older
    log — continued on the new part of ``train``: its interactions at log rows ``new_from`` and
    after (``train``'s rows in its ``(timestamp, row)`` order; the rows before are the older
    log, and may serve as context), for ``epochs`` epochs at learning rate ``lr`` (``None``: the
    model's own). Deterministic like ``fit``: the same previous fit, log, ``new_from`` and
    ``seed`` give bit-identical rank lists. Returns ``self``; ``previous`` is not changed.

    A model declares it by having the method; one whose class has it but not for every
    configuration says so with a ``warm_startable`` attribute (:func:`warm_startable`). The
    built-in sequential models with the plain next-item loss have it
    (:meth:`recaudit.models.sequential.SequentialRecommender.warm_start`).
    """

    def warm_start(self, previous: Recommender, train: Interactions, *, new_from: int,
                   seed: int, epochs: int = 1, lr: float | None = None) -> Recommender: ...


def warm_startable(model: object) -> bool:
    """Whether ``model`` declares a warm start (:class:`SupportsWarmStart`, and its
    ``warm_startable`` attribute when it has one)."""
    return isinstance(model, SupportsWarmStart) and bool(getattr(model, "warm_startable", True))


def checked_fit(model: Recommender, train: Interactions, **fit_args: object) -> Recommender:
    """``model.fit(train, **fit_args)``, held to the contract: ``fit`` returns the model
    (``self``); anything else is a :class:`~recaudit.errors.ModelError`."""
    out = model.fit(train, **fit_args)  # type: ignore[arg-type]
    if out is not model:
        raise ModelError(f"{type(model).__name__}.fit must return the model itself (return "
                         f"self), got {_kind(out)}")
    return out


def checked_rank(model: Recommender, queries: Queries | Interactions,
                 k: int | None = None) -> RankLists:
    """``model.rank(queries, k=k)``, held to the contract: a
    :class:`~recaudit.data.RankLists` with one list per query (when ``queries`` is a
    :class:`~recaudit.data.Queries` batch), at most ``k`` items long, of item codes in
    ``[0, n_items)``. Anything else is a :class:`~recaudit.errors.ModelError` saying what
    came back, instead of an ``AttributeError`` deep inside the metrics."""
    out = model.rank(queries, k=k)
    name = f"{type(model).__name__}.rank"
    if not isinstance(out, RankLists):
        raise ModelError(f"{name} must return RankLists (got {_kind(out)}); return "
                         "recaudit.data.RankLists(items[, scores]), one row per query")
    if isinstance(queries, Queries) and len(out) != len(queries):
        raise ModelError(f"{name} returned {len(out)} rank list{'s' if len(out) != 1 else ''} "
                         f"for {len(queries)} queries; it must return one list per query, in "
                         "their order")
    if k is not None and out.depth > k:
        raise ModelError(f"{name}(queries, k={k}) returned lists of {out.depth} items; at "
                         "most k")
    n_items = queries.n_items
    if out.items.size and (out.items.min() < 0 or out.items.max() >= n_items):
        bad = out.items[(out.items < 0) | (out.items >= n_items)][0]
        raise ModelError(f"{name} returned item code {int(bad)}, outside the catalogue's "
                         f"[0, {n_items}); codes are the training data's dense item codes")
    return out


def _kind(value: object) -> str:
    return "None" if value is None else type(value).__name__


def as_queries(queries: Queries | Interactions, max_len: int = 200) -> Queries:
    """Normalise the ``queries`` argument of :meth:`Recommender.rank`."""
    if isinstance(queries, Queries):
        return queries
    if isinstance(queries, Interactions):
        return Queries.next_item(queries, max_len=max_len)
    raise TypeError(f"queries must be Queries or Interactions, got {type(queries).__name__}")


def top_k_from_scores(scores: np.ndarray, k: int | None) -> RankLists:
    """Rank lists from a dense score matrix ``[n_queries, n_items]``.

    Items with score ``-inf`` (or NaN) are excluded (e.g. already-seen items); ties are
    broken by the lower item code so results are deterministic (``-0.0`` ties with ``0.0``).
    Every row keeps ``depth = min(k, fewest finite scores of any row)`` items; ``k=None``
    keeps every finite-score item (rows must then have the same number of finite scores).

    The order is that of sorting each row by ``(-score, item)``. A short list is *selected*
    instead of sorting the row: with ``t`` the row's depth-th largest score
    (:func:`numpy.partition`, linear time), the list is the items scoring above ``t`` and,
    of those scoring exactly ``t``, the lowest codes needed to fill it; only these ``depth``
    items are then sorted. Rows go in blocks (:func:`rank_chunks`), so memory stays a few
    copies of a block. For Foursquare-sized catalogues this is about 7x faster than sorting
    every row (``benchmarks/bench_ranking.py``).
    """
    scores = np.asarray(scores)
    if scores.ndim != 2:
        raise ValueError(f"scores must be a [n_queries, n_items] matrix, got shape "
                         f"{scores.shape}")
    n, m = scores.shape
    block = max(1, (16 << 20) // max(m, 1))          # ~16M scores (64 MB of float32) a block
    return rank_chunks((scores[lo:lo + block] for lo in range(0, n, block)), k, n)


#: scores a selection (:func:`top_order`) works on at once at most: its temporaries are about
#: three times as many bytes as these scores, whatever the size of the chunk it is given
_SELECT_SCORES = 1 << 20


def rank_chunks(chunks: Iterable[np.ndarray], k: int | None, n: int | None = None
                ) -> RankLists:
    """The rank lists of :func:`top_k_from_scores` of the rows of ``chunks`` (score matrices
    ``[rows, n_items]``, in query order) stacked, without ever holding more than one chunk's
    scores: a model scores a chunk of queries, this keeps its top ``k`` and drops the chunk.
    ``n``: the number of rows of all chunks, when known: the lists are then written in place
    (else each chunk's are kept and joined at the end, a copy of them all).

    Each chunk keeps ``min(k, its fewest finite scores)`` items per row and the lists are
    cut to the fewest of all chunks at the end: a list of the order ``(-score, item)`` cut
    to fewer items is the list a smaller depth selects, so the lists are exactly those of
    :func:`top_k_from_scores` on the whole matrix. Peak memory: one chunk, the selection's
    temporaries (about three times a block of the chunk's rows: a quarter of them, at most
    :data:`_SELECT_SCORES` scores) and the lists kept."""
    if k is not None and (isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1):
        raise ValueError(f"k must be None or an integer >= 1, got {k!r}")
    parts: list[tuple[np.ndarray, np.ndarray]] = []
    depth: int | None = None
    width: int | None = None
    row = 0
    for s in chunks:
        s = np.asarray(s)
        if s.ndim != 2 or (width is not None and s.shape[1] != width):
            raise ValueError(f"score chunks must be [rows, n_items] matrices of one width, got "
                             f"shape {s.shape}" + (f" after width {width}" if width else ""))
        width = s.shape[1]
        if not len(s):
            continue
        # a block at a time: at most _SELECT_SCORES scores, a quarter of the chunk
        rows = max(1, min(_SELECT_SCORES // max(width, 1), -(-len(s) // 4)))
        d = min(int(np.isfinite(s[lo:lo + rows]).sum(axis=1).min())
                for lo in range(0, len(s), rows))
        d = d if k is None else min(d, int(k))
        depth = d if depth is None else min(depth, d)
        if n is None:
            parts.append((np.empty((len(s), d), np.int32), np.empty((len(s), d), np.float32)))
            items, values, at = parts[-1][0], parts[-1][1], 0
        else:
            if not parts:   # one array for every row, as wide as the first chunk allows
                parts.append((np.empty((n, d), np.int32), np.empty((n, d), np.float32)))
            items, values, at = parts[0][0], parts[0][1], row
            if at + len(s) > n:
                raise ValueError(f"score chunks hold more than the n = {n} rows given")
        for lo in range(0, len(s), rows):
            top = top_order(s[lo:lo + rows], min(d, items.shape[1]))
            items[at + lo:at + lo + len(top), :top.shape[1]] = top
            values[at + lo:at + lo + len(top), :top.shape[1]] = \
                np.take_along_axis(s[lo:lo + rows], top, axis=1)
        row += len(s)
        del s   # before the next chunk is scored: one chunk's scores at a time
    if n is not None and row != n:
        raise ValueError(f"score chunks hold {row} rows, not the n = {n} given")
    if depth is None:   # no query
        return RankLists(np.zeros((0, 0), dtype=np.int32), np.zeros((0, 0), dtype=np.float32))
    if len(parts) > 1:   # one array each, the chunks' dropped as soon as they are copied
        parts[:] = [(np.concatenate([a[:, :depth] for a, _ in parts]),
                     np.concatenate([v[:, :depth] for _, v in parts]))]
    items, values = parts.pop()
    if items.shape[1] > depth:
        items, values = items[:, :depth].copy(), values[:, :depth].copy()
    items.flags.writeable = values.flags.writeable = False   # taken by RankLists as they are
    return RankLists(items, values)


def top_order(s: np.ndarray, depth: int) -> np.ndarray:
    """The first ``depth`` items of each row of ``s`` in ``(-score, item)`` order, NaN
    counting as ``-inf`` (``depth`` <= the row length; not validated: the public callers
    are :func:`rank_chunks` and the collaborative-filtering models' ``recommend``)."""
    n, m = s.shape
    if depth == 0:
        return np.zeros((n, 0), dtype=np.int64)
    if np.isnan(s).any():
        s = np.where(np.isnan(s), -np.inf, s)
    if depth * 8 >= m:               # a long list: a stable sort (ties stay in item order)
        return np.argsort(-s, axis=1, kind="stable")[:, :depth]
    # the depth-th largest (a copy: a view would keep the whole partitioned block alive)
    t = np.partition(s, m - depth, axis=1)[:, m - depth, None].copy()
    above = s > t
    tie = s == t
    need = depth - above.sum(axis=1, keepdims=True)
    keep = above | (tie & (np.cumsum(tie, axis=1, dtype=np.int32) <= need))
    chosen = np.nonzero(keep)[1].reshape(n, depth)     # row-major: each row's, by item code
    order = np.lexsort((chosen, -np.take_along_axis(s, chosen, axis=1)), axis=-1)
    return np.take_along_axis(chosen, order, axis=1)
