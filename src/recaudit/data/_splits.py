"""Train/test splits and the test queries every model of an audit is asked.

All splits work on a log in temporal order and return a :class:`Split`. The test queries are
built from the *original* log: query ``q`` for test interaction ``r`` of user ``u`` has as
context the ``max_len`` interactions of ``u`` immediately before ``r`` in the original log
(training ones and earlier test ones — the usual next-item evaluation with known history). A
model trained on perturbed data is therefore asked exactly the same questions.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from recaudit.data._interactions import Interactions, pair_keys
from recaudit.data._queries import Queries

__all__ = ["Split", "temporal_ratio_split", "leave_last_out", "global_temporal_split",
           "holdout_last", "queries_for_rows", "split"]


@dataclass(frozen=True, eq=False)
class Split:
    """The result of a split.

    ``train`` and ``test`` share the original log's code space; ``queries`` has one query per
    test row (same order as ``test``), ``validation`` (optional) one per held-out validation
    row, whose interactions are in neither ``train`` nor ``test``.
    """

    train: Interactions
    test: Interactions
    queries: Queries
    validation: Queries | None = None
    method: str = ""

    def summary(self) -> dict[str, int]:
        return {"train": len(self.train), "test": len(self.test), "queries": len(self.queries),
                "validation": 0 if self.validation is None else len(self.validation),
                "users": self.train.n_users, "items": self.train.n_items}

    def held_out_pairs(self) -> np.ndarray:
        """Sorted distinct :func:`pair_keys` of every held-out ``(user, item)``: the test
        interactions and the validation targets (what a perturbation must never add)."""
        n_items = self.train.n_items
        keys = [pair_keys(self.test.user, self.test.item, n_items)]
        if self.validation is not None:
            ok = np.asarray(self.validation.target) >= 0
            keys.append(pair_keys(np.asarray(self.validation.user)[ok],
                                  np.asarray(self.validation.target)[ok], n_items))
        return np.unique(np.concatenate(keys))


def _positions(log: Interactions) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For every row: its 0-based position in its user's sequence, and the user's length."""
    indptr, rows = log.user_sequences()
    lens = np.diff(indptr)
    pos = np.empty(len(log), dtype=np.int64)
    pos[rows] = np.arange(len(rows)) - np.repeat(indptr[:-1], lens)
    return pos, lens[log.user], indptr


def queries_for_rows(log: Interactions, rows: np.ndarray, max_len: int = 200) -> Queries:
    """Queries asking for ``log`` rows ``rows``, each with its user's preceding items as context."""
    if max_len < 1:
        raise ValueError(f"max_len must be >= 1, got {max_len}")
    rows = np.asarray(rows, dtype=np.int64)
    indptr, seq = log.user_sequences()
    pos, _, _ = _positions(log)
    p = pos[rows]
    lens = np.minimum(p, max_len)
    starts = indptr[log.user[rows]] + p - lens
    qptr = np.zeros(len(rows) + 1, dtype=np.int64)
    np.cumsum(lens, out=qptr[1:])
    src = seq[np.repeat(starts, lens) + (np.arange(qptr[-1]) - np.repeat(qptr[:-1], lens))]
    return Queries(log.user[rows], qptr, log.item[src], log.timestamp[src], log.item[rows],
                   log.timestamp[rows], log.n_items, log.n_users)


def _make(log: Interactions, is_test: np.ndarray, is_val: np.ndarray | None, max_len: int,
          method: str) -> Split:
    is_train = ~is_test if is_val is None else ~(is_test | is_val)
    test_rows = np.flatnonzero(is_test)
    validation = None
    if is_val is not None:
        validation = queries_for_rows(log, np.flatnonzero(is_val), max_len)
    return Split(log.take(is_train), log.take(test_rows), queries_for_rows(log, test_rows, max_len),
                 validation, method)


def temporal_ratio_split(log: Interactions, ratio: float = 0.9, *, validation: bool = False,
                         max_len: int = 200, floor: str = "train") -> Split:
    """Per-user temporal split (Oh et al. 2022 §5): each user's first ``ratio`` of rows train.

    ``floor="train"``: a user with ``n`` rows keeps ``n_train = max(1, floor(ratio * n))`` rows
    for training and the remaining ``n - n_train`` are test rows. ``floor="test"``: the test
    part is the last ``floor((1 - ratio) * n)`` rows and the rest trains (CASPER's released
    code, ``int(0.1 * len)``; a user with 15 rows then has 14 training rows instead of 13, and
    a user with fewer than ``1 / (1 - ratio)`` rows has no test row). Floors are computed with a
    ``1e-9`` margin so that 0.9 * 10 gives 9 despite floating point. With ``validation`` the
    last training row of every user with at least two training rows becomes a validation query
    instead (it is removed from ``train``).
    """
    if not 0.0 < ratio < 1.0:
        raise ValueError(f"ratio must be in (0, 1), got {ratio}")
    if floor not in ("train", "test"):
        raise ValueError(f"floor must be 'train' or 'test', got {floor!r}")
    pos, n, _ = _positions(log)
    if floor == "train":
        n_train = np.maximum(1, np.floor(ratio * n + 1e-9).astype(np.int64))
    else:
        n_train = np.maximum(1, n - np.floor((1.0 - ratio) * n + 1e-9).astype(np.int64))
    is_test = pos >= n_train
    is_val = (pos == n_train - 1) & (n_train >= 2) if validation else None
    return _make(log, is_test, is_val, max_len, f"temporal-ratio({ratio})")


def leave_last_out(log: Interactions, *, validation: bool = False, max_len: int = 200) -> Split:
    """Each user's last row is the test item; with ``validation`` the one before is the
    validation item (Betello et al. 2023 §3.1). Users with a single row keep it for training."""
    pos, n, _ = _positions(log)
    is_test = (pos == n - 1) & (n >= 2)
    is_val = ((pos == n - 2) & (n >= 3)) if validation else None
    return _make(log, is_test, is_val, max_len, "leave-last-out")


def holdout_last(log: Interactions, *, min_length: int = 2, max_len: int = 200
                 ) -> tuple[Interactions, Queries]:
    """``(rest, queries)``: each user with at least ``min_length`` rows loses their last row,
    and one query per such user (by user code) asks for it, with the user's preceding rows as
    context (at most ``max_len``) and the held-out item as target.

    The leave-last-out protocol of a validation hold-out (early stopping) and of the model
    conformance kit; :func:`leave_last_out` is the same cut as a :class:`Split`.
    """
    if min_length < 2:
        raise ValueError(f"min_length must be >= 2 (a query needs context), got {min_length}")
    indptr, rows = log.user_sequences()
    counts = np.diff(indptr)
    users = np.flatnonzero(counts >= min_length)
    last = rows[indptr[users + 1] - 1]
    keep = np.ones(len(log), dtype=bool)
    keep[last] = False
    return log.take(keep), queries_for_rows(log, last, max_len)


def global_temporal_split(log: Interactions, ratio: float = 0.9, *, max_len: int = 200) -> Split:
    """Rows before the global ``ratio`` time quantile train, the rest test.

    The cut is a row index: the first ``floor(ratio * len(log))`` rows in temporal order are
    training rows, and rows tied with the last training timestamp stay in training too, so no
    test row has a timestamp equal to a training row's.
    """
    if not 0.0 < ratio < 1.0:
        raise ValueError(f"ratio must be in (0, 1), got {ratio}")
    cut = int(np.floor(ratio * len(log)))
    if cut == 0:
        is_test = np.ones(len(log), dtype=bool)
    else:
        is_test = log.timestamp > log.timestamp[cut - 1]
    return _make(log, is_test, None, max_len, f"global-temporal({ratio})")


_METHODS: dict[str, Callable[..., Split]] = {"temporal-ratio": temporal_ratio_split, "leave-last-out": leave_last_out,
            "global-temporal": global_temporal_split}


def split(log: Interactions, method: str = "temporal-ratio", **options) -> Split:
    """Split by name: ``temporal-ratio``, ``leave-last-out`` or ``global-temporal``."""
    if method not in _METHODS:
        from recaudit.errors import ConfigError, did_you_mean

        raise ConfigError(f"unknown split {method!r}; choose one of {sorted(_METHODS)}."
                          + did_you_mean(method, _METHODS))
    return _METHODS[method](log, **options)
