"""Which interactions to perturb (Oh et al. 2022, sections 6.1 and 7.1.2).

Every selector returns ``(rows, scores)``: ``k`` distinct original rows in selection order and
the score of each (an empty array for the random selectors).

- ``random``: ``k`` rows uniformly without replacement among all training interactions;
- ``earliest-random``: the first interaction of each of ``k`` distinct users drawn uniformly
  among users with at least one interaction;
- ``latest-random``: the same with each user's last interaction;
- ``casper``: the ``k`` highest cascading scores (:func:`casper_scores`), ties to the earlier
  row, i.e. earliest timestamp then row (Oh et al. 2022 section 7.4);
- ``tracin`` and ``rev-adv-*`` live in their own modules.
"""

from __future__ import annotations

import numpy as np

from recaudit.data import Interactions
from recaudit.perturb._casper import casper_scores

__all__ = ["select_random", "select_earliest_random", "select_latest_random", "select_casper",
           "top_k"]


def _check_k(k: int, available: int, what: str) -> int:
    if isinstance(k, bool) or int(k) != k or k < 1:
        raise ValueError(f"count k must be a positive integer, got {k!r}")
    if k > available:
        raise ValueError(f"cannot select {k} distinct {what}: only {available} available")
    return int(k)


def top_k(scores: np.ndarray, k: int) -> np.ndarray:
    """Indices of the ``k`` largest scores, ties to the lower index (stable, deterministic)."""
    scores = np.asarray(scores)
    k = _check_k(k, len(scores), "rows")
    order = np.lexsort((np.arange(len(scores)), -scores.astype(np.float64)))
    return order[:k].astype(np.int64)


def select_random(log: Interactions, k: int, rng: np.random.Generator
                  ) -> tuple[np.ndarray, np.ndarray]:
    k = _check_k(k, len(log), "interactions")
    return rng.choice(len(log), size=k, replace=False).astype(np.int64), np.empty(0)


def _user_end(log: Interactions, k: int, rng: np.random.Generator, last: bool
              ) -> tuple[np.ndarray, np.ndarray]:
    indptr, rows = log.user_sequences()
    active = np.flatnonzero(np.diff(indptr) > 0)
    k = _check_k(k, len(active), "users")
    users = active[rng.choice(len(active), size=k, replace=False)]
    pos = indptr[users + 1] - 1 if last else indptr[users]
    return rows[pos].astype(np.int64), np.empty(0)


def select_earliest_random(log: Interactions, k: int, rng: np.random.Generator
                           ) -> tuple[np.ndarray, np.ndarray]:
    return _user_end(log, k, rng, last=False)


def select_latest_random(log: Interactions, k: int, rng: np.random.Generator
                         ) -> tuple[np.ndarray, np.ndarray]:
    return _user_end(log, k, rng, last=True)


def select_casper(log: Interactions, k: int, *, max_len: int | None = None,
                  method: str = "auto") -> tuple[np.ndarray, np.ndarray]:
    """The ``k`` rows with the highest CASPER scores (deterministic: no randomness)."""
    scores = casper_scores(log, max_len, method=method)
    rows = top_k(scores, k)
    return rows, scores[rows].astype(np.float64)
