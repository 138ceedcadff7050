"""Which training interactions descend from given ones in CASPER's interaction graph.

The interaction DAG (IDAG, Oh et al. 2022 §6.2; :func:`recaudit.perturb.casper_graph`) joins
consecutive interactions of a user and of an item where the timestamp strictly increases. An
edit to an interaction reaches, through the model's training, the interactions that descend
from it: a CASPER score is the number of descendants of a root. :func:`casper_descendants`
marks the descendants of any set of rows, so that one can ask how many of *one user's*
interactions an edit reaches.

Every edge goes from a row to a strictly later timestamp, so the row order (the log's stable
``(timestamp, row)`` order) is topological: one forward pass over the rows from the first
start row marks every descendant, ``O(n)`` time and ``n`` bytes.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from recaudit._jit import njit
from recaudit.data import Interactions
from recaudit.perturb._casper import casper_graph

__all__ = ["casper_descendants"]


@njit(cache=True, nogil=True)
def _reach(reached, next_user, next_item, first):  # pragma: no cover - numba
    for v in range(first, len(reached)):
        if reached[v]:
            if next_user[v] >= 0:
                reached[next_user[v]] = True
            if next_item[v] >= 0:
                reached[next_item[v]] = True


def casper_descendants(interactions: Interactions, rows: Iterable[int],
                       max_len: int | None = None) -> np.ndarray:
    """A boolean mask over the rows of ``interactions``: the rows reachable from ``rows`` in
    the IDAG built with ``max_len`` (:func:`~recaudit.perturb.casper_graph`), ``rows``
    themselves included (a start row outside the graph's window reaches only itself).

    For a zero-in-degree row ``r`` the mask's sum is CASPER's exact score of ``r``
    (:func:`~recaudit.perturb.casper_scores`).
    """
    start = np.asarray(list(rows), dtype=np.int64)
    n = len(interactions)
    if len(start) and (start.min() < 0 or start.max() >= n):
        raise ValueError(f"rows must be in [0, {n}), got {start.min()}..{start.max()}")
    reached = np.zeros(n, dtype=np.bool_)
    if not len(start):
        return reached
    _, next_user, next_item = casper_graph(interactions, max_len)
    # edges join nodes only: a row outside the graph's window has none and reaches itself
    reached[start] = True
    _reach(reached, next_user, next_item, int(start.min()))
    return reached
