"""Ordering exported rank lists: rows of (query, item, rank and/or score) into lists.

Shared by the command models' output and ``recaudit compare``'s run files. Rows are sorted
by query, then

- by ``rank`` ascending when ranks are given (distinct integers per query, any start);
- else by ``score`` descending, ties broken by the item's *code* ascending or descending
  (callers choose codes whose order is the tie rule they document, e.g. catalogue order, or
  the byte order of the ids as trec_eval does).

A query that repeats a rank or an item is an error; the message names the 1-based data rows
through the caller's ``row`` function (a file line, a data row, ...).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

__all__ = ["order_ranked_rows", "RankedRowsError"]


class RankedRowsError(ValueError):
    """Raised with a message naming the offending rows (callers add the file)."""


def order_ranked_rows(query: np.ndarray, item: np.ndarray, *, rank: np.ndarray | None = None,
                      score: np.ndarray | None = None, ties: str = "ascending",
                      row: Callable[[int], str] = lambda i: f"data row {i + 1}",
                      item_label: Callable[[int], object] = lambda c: c,
                      query_label: Callable[[int], object] = lambda q: q) -> np.ndarray:
    """Row order that lists each query's items best first (see the module docstring).

    ``query`` and ``item`` are integer codes; ``row(i)`` describes 0-based row ``i`` in
    messages, ``item_label(code)`` an item and ``query_label(code)`` a query.
    """
    query = np.asarray(query, dtype=np.int64)
    item = np.asarray(item, dtype=np.int64)
    if rank is not None:
        rank = np.asarray(rank, dtype=np.int64)
        order = np.lexsort((rank, query))
        same = (np.diff(query[order]) == 0) & (np.diff(rank[order]) == 0)
        if same.any():
            j = int(np.flatnonzero(same)[0])
            a, b = sorted((int(order[j]), int(order[j + 1])))
            raise RankedRowsError(f"query {query_label(int(query[a]))} has rank {int(rank[a])} twice "
                                  f"({row(a)} and {row(b)})")
    elif score is not None:
        tie = item if ties == "ascending" else -item
        order = np.lexsort((tie, -np.asarray(score, dtype=np.float64), query))
    else:
        raise ValueError("order_ranked_rows needs rank or score")
    q_sorted, c_sorted = query[order], item[order]
    pair_order = np.lexsort((c_sorted, q_sorted))
    dup = (np.diff(q_sorted[pair_order]) == 0) & (np.diff(c_sorted[pair_order]) == 0)
    if dup.any():
        j = int(np.flatnonzero(dup)[0])
        a, b = sorted((int(order[pair_order[j]]), int(order[pair_order[j + 1]])))
        raise RankedRowsError(f"query {query_label(int(query[a]))} lists item {item_label(int(item[a]))!r} "
                              f"twice ({row(a)} and {row(b)})")
    return order
