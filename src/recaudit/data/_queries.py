"""Test queries: the questions asked of every model of an audit."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from recaudit.data._interactions import Interactions

__all__ = ["Queries"]


def _ro(a: np.ndarray, dtype) -> np.ndarray:
    a = np.array(a, dtype=dtype, copy=True)
    a.flags.writeable = False
    return a


@dataclass(frozen=True, eq=False)
class Queries:
    """A batch of next-item queries in CSR layout.

    Query ``q`` asks: *user* ``user[q]``, whose most recent items (oldest first) are
    ``context_item[context_indptr[q]:context_indptr[q+1]]`` at times ``context_time[...]``,
    what is the next item (at time ``timestamp[q]``)? ``target[q]`` is the ground truth, or
    ``-1`` when unknown (queries built from a log to ask for the future).

    Queries are built from the *original* data by a split, so a model trained on perturbed data
    is asked exactly the same questions. ``n_items`` fixes the catalogue.
    """

    user: np.ndarray
    context_indptr: np.ndarray
    context_item: np.ndarray
    context_time: np.ndarray
    target: np.ndarray
    timestamp: np.ndarray
    n_items: int
    n_users: int

    def __post_init__(self) -> None:
        n = len(self.user)
        object.__setattr__(self, "user", _ro(self.user, np.int32))
        object.__setattr__(self, "context_indptr", _ro(self.context_indptr, np.int64))
        object.__setattr__(self, "context_item", _ro(self.context_item, np.int32))
        object.__setattr__(self, "context_time", _ro(self.context_time,
                                                     np.asarray(self.context_time).dtype))
        object.__setattr__(self, "target", _ro(self.target, np.int32))
        object.__setattr__(self, "timestamp", _ro(self.timestamp,
                                                  np.asarray(self.timestamp).dtype))
        if len(self.context_indptr) != n + 1 or len(self.target) != n or len(self.timestamp) != n:
            raise ValueError("Queries arrays have inconsistent lengths")
        if len(self.context_item) != self.context_indptr[-1]:
            raise ValueError("context_item length does not match context_indptr")

    def __len__(self) -> int:
        return len(self.user)

    def context(self, q: int) -> np.ndarray:
        """Context items of query ``q``, oldest first."""
        return self.context_item[self.context_indptr[q]:self.context_indptr[q + 1]]

    def lengths(self) -> np.ndarray:
        return np.diff(self.context_indptr)

    def padded(self, max_len: int, pad: int = -1) -> tuple[np.ndarray, np.ndarray]:
        """Right-aligned ``[n, max_len]`` item and time arrays, left-padded with ``pad``.

        The most recent ``max_len`` context items are kept; the last column is the latest item.
        """
        n = len(self)
        items = np.full((n, max_len), pad, dtype=np.int64)
        times = np.zeros((n, max_len), dtype=np.float64)
        lens = np.minimum(self.lengths(), max_len)
        ends = self.context_indptr[1:]
        # position j of row q (right-aligned) holds element ends[q] - lens[q] + (j - (max_len - lens[q]))
        cols = np.arange(max_len)
        start_col = max_len - lens
        mask = cols[None, :] >= start_col[:, None]
        src = (ends - lens)[:, None] + (cols[None, :] - start_col[:, None])
        items[mask] = self.context_item[src[mask]]
        times[mask] = self.context_time[src[mask]]
        return items, times

    def subset(self, rows: np.ndarray) -> Queries:
        """Queries ``rows`` (indices), in the given order."""
        rows = np.asarray(rows, dtype=np.int64)
        lens = self.lengths()[rows]
        indptr = np.zeros(len(rows) + 1, dtype=np.int64)
        np.cumsum(lens, out=indptr[1:])
        idx = np.concatenate([np.arange(self.context_indptr[r], self.context_indptr[r + 1])
                              for r in rows]) if len(rows) else np.zeros(0, dtype=np.int64)
        return Queries(self.user[rows], indptr, self.context_item[idx], self.context_time[idx],
                       self.target[rows], self.timestamp[rows], self.n_items, self.n_users)

    def edited(self, removed: Interactions, added: Interactions) -> Queries:
        """These queries with the same edits applied to their contexts as to a training log.

        A context entry is dropped when its ``(user, item, time)`` is one of ``removed``'s
        rows; each row of ``added`` joins the context of every query of its user whose
        timestamp is not earlier than the row's (``time <= timestamp[q]``). Contexts stay in
        time order; an added entry follows the kept entries with the same time. Targets,
        timestamps and the catalogue are unchanged. Entries are matched by value, so two
        identical ``(user, item, time)`` rows are removed together.

        This is Betello et al. 2023's setting, where a user's whole sequence is perturbed
        before the split, so a test input loses what training lost (see
        :attr:`recaudit.perturb.Needs.inputs`).
        """
        import pandas as pd

        lens = self.lengths()
        owner = np.repeat(np.arange(len(self), dtype=np.int64), lens)
        mine = pd.MultiIndex.from_arrays([self.user[owner], self.context_item,
                                          self.context_time])
        gone = pd.MultiIndex.from_arrays([removed.user, removed.item, removed.timestamp])
        keep = ~np.asarray(mine.isin(gone)) if len(removed) else np.ones(len(owner), bool)
        pairs = pd.DataFrame({"user": added.user, "row": np.arange(len(added))}).merge(
            pd.DataFrame({"user": self.user, "query": np.arange(len(self))}), on="user")
        row = pairs["row"].to_numpy(np.int64)
        q_new = pairs["query"].to_numpy(np.int64)
        ok = np.asarray(added.timestamp)[row] <= self.timestamp[q_new]
        row, q_new = row[ok], q_new[ok]
        query = np.concatenate([owner[keep], q_new])
        time = np.concatenate([self.context_time[keep], np.asarray(added.timestamp)[row]])
        item = np.concatenate([self.context_item[keep], added.item[row]])
        origin = np.concatenate([np.zeros(int(keep.sum()), np.int8),
                                 np.ones(len(row), np.int8)])
        order = np.lexsort((np.arange(len(query)), origin, time, query))
        indptr = np.zeros(len(self) + 1, dtype=np.int64)
        np.cumsum(np.bincount(query, minlength=len(self)), out=indptr[1:])
        return Queries(self.user, indptr, item[order], time[order], self.target,
                       self.timestamp, self.n_items, self.n_users)

    @classmethod
    def next_item(cls, log: Interactions, max_len: int = 200) -> Queries:
        """One query per user of ``log`` who has interactions: what comes after their last one?

        Targets are unknown (``-1``); the query timestamp is the user's last timestamp.
        """
        indptr, rows = log.user_sequences()
        users = np.flatnonzero(np.diff(indptr) > 0)
        lens = np.minimum(np.diff(indptr)[users], max_len)
        ends = indptr[users + 1]
        qptr = np.zeros(len(users) + 1, dtype=np.int64)
        np.cumsum(lens, out=qptr[1:])
        pos = np.repeat(ends - lens, lens) + (np.arange(qptr[-1]) - np.repeat(qptr[:-1], lens))
        src = rows[pos]
        return cls(users, qptr, log.item[src], log.timestamp[src],
                   np.full(len(users), -1), log.timestamp[rows[ends - 1]], log.n_items,
                   log.n_users)
