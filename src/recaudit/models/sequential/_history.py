"""Recurrent state carried over each user's whole history, trained in temporal mini-batches.

The training scheme of Oh et al. 2022 (§6.1) for their temporal models: every training
interaction is a sample, the log (rows in time order) is cut into mini-batches of consecutive
rows (*groups*), one optimiser step each, and every user's recurrent state runs on from one
group to the next over the user's whole history — no window, no restart. Row ``k`` (user ``u``)
is predicted from ``h_u`` *before* ``k`` (after the user's previous row, or the zero state for
the user's first row), then ``h_u ← cell(x_k, h_u)``.

Gradient truncation (the rule of JODIE's code, Kumar et al. 2019, which the t-batches of
:mod:`recaudit.models.sequential._jodie._plan` follow): within a group the chain of a user's rows is
differentiated end to end (back-propagation through time over the group); the state entering a
group is the detached state left by the previous group. States restart from zero at every
epoch. Within a group the rows are scheduled as in JODIE's t-batches (§4.3), restricted to the
user dependency a GRU has: a row's *level* is the number of earlier rows of its user in the
group, the rows of one level are independent and run as one batch. That is exactly the layout
of a :class:`torch.nn.utils.rnn.PackedSequence` whose sequences are the group's users sorted
by their number of rows, so one ``nn.GRU`` call processes a group (:class:`GroupLayout`).

Ranking reads, for a query of user ``u``, the state after ``u``'s training history under the
final weights (recomputed in evaluation mode after training,
:meth:`._latentcross._histories.HistoryStack.states`), advanced over the query's context entries
later than ``u``'s last training time — the test interactions before the query; entries at or
before that time are the training history itself (:func:`query_layout`). A context holds at
most the split's ``max_len`` entries (200 by default), so a query more than that many
interactions past the end of training skips the entries in between.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from recaudit.data import Interactions, Queries

__all__ = ["GroupLayout", "group_layouts", "row_gaps", "query_layout", "QueryLayout",
           "count_groups"]


def count_groups(n: int, batch_size: int) -> np.ndarray:
    """Group starts ``[0, b, 2b, ..., n]`` for groups of ``batch_size`` consecutive rows."""
    return np.append(np.arange(0, n, batch_size, dtype=np.int64), np.int64(n))


def row_gaps(user: np.ndarray, time: np.ndarray) -> np.ndarray:
    """``Δ_k = t_k - t_prev(u_k)`` for rows in time order (0 for a user's first row)."""
    user = np.asarray(user, np.int64)
    order = np.argsort(user, kind="stable")
    same = user[order][1:] == user[order][:-1]
    gaps = np.zeros(len(user), np.float64)
    t = np.asarray(time, np.float64)
    cur, prev = order[1:][same], order[:-1][same]
    gaps[cur] = t[cur] - t[prev]
    return gaps


def _packed_positions(seq: np.ndarray, step: np.ndarray, lengths: np.ndarray
                      ) -> tuple[np.ndarray, np.ndarray]:
    """PackedSequence layout of elements ``(seq, step)`` whose sequences ``0..S-1`` have
    ``lengths`` sorted in decreasing order: ``(position of each element, batch_sizes)``."""
    n_steps = int(lengths.max()) if len(lengths) else 0
    batch_sizes = len(lengths) - np.cumsum(np.bincount(lengths, minlength=n_steps + 1))[:-1]
    offsets = np.concatenate([[0], np.cumsum(batch_sizes)[:-1]]).astype(np.int64)
    return offsets[step] + seq, batch_sizes.astype(np.int64)


@dataclass(frozen=True)
class GroupLayout:
    """One group as a packed batch.

    ``rows``: the group's log rows in packed order; ``users``: the group's users in sequence
    order (decreasing number of rows, ties by first row); ``batch_sizes``: users active at each
    level; ``before``: for each packed element, its row's input state as an index into
    ``[h0 (one row per user) ; packed outputs]``.
    """

    rows: np.ndarray
    users: np.ndarray
    batch_sizes: np.ndarray
    before: np.ndarray


def _layout(owner: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray,
                                        np.ndarray]:
    """Packed layout of elements (in order) owned by ``owner`` ids: ``(order, owners in
    sequence order, batch_sizes, before, step)`` where ``order`` lists the elements in packed
    order."""
    owner = np.asarray(owner, np.int64)
    uniq, first, inv, counts = np.unique(owner, return_index=True, return_inverse=True,
                                         return_counts=True)
    seq_order = np.lexsort((first, -counts))           # decreasing count, then first element
    seq_of = np.empty(len(uniq), np.int64)
    seq_of[seq_order] = np.arange(len(uniq))
    seq = seq_of[inv]
    # step = occurrence index of the element within its owner
    by_owner = np.argsort(inv, kind="stable")
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    step = np.empty(len(owner), np.int64)
    step[by_owner] = np.arange(len(owner)) - np.repeat(starts, counts)
    pos, batch_sizes = _packed_positions(seq, step, counts[seq_order])
    order = np.empty(len(owner), np.int64)
    order[pos] = np.arange(len(owner))
    n_seq = len(uniq)
    prev_pos = np.where(step > 0, _packed_positions(seq, np.maximum(step - 1, 0),
                                                    counts[seq_order])[0] + n_seq, seq)
    return order, uniq[seq_order], batch_sizes, prev_pos[order], step[order]


def group_layouts(user: np.ndarray, group_ptr: np.ndarray) -> list[GroupLayout]:
    """The packed layout of every group of a log whose rows are in time order."""
    out = []
    for g in range(len(group_ptr) - 1):
        s, e = int(group_ptr[g]), int(group_ptr[g + 1])
        order, users, sizes, before, _ = _layout(user[s:e])
        out.append(GroupLayout(order + s, users, sizes, before))
    return out


@dataclass(frozen=True)
class QueryLayout:
    """How each query's state is formed (see the module docstring).

    ``start_user [Q]``: the user whose end-of-training state starts the query (its own user);
    ``extra``: the packed advancement over the queries with later context entries —
    ``queries`` (query indices in sequence order), ``items`` / ``gaps`` (entries in packed
    order), ``batch_sizes``; ``last_time [Q]``: the time of the query's latest known event
    (NaN when the user has none), from which the query's own gap is measured.
    """

    queries: np.ndarray
    items: np.ndarray
    gaps: np.ndarray
    batch_sizes: np.ndarray
    last_time: np.ndarray


def query_layout(queries: Queries, train_last_time: np.ndarray) -> QueryLayout:
    """Which context entries advance each query's state beyond its user's training history."""
    lens = queries.lengths()
    owner = np.repeat(np.arange(len(queries), dtype=np.int64), lens)
    ctime = queries.context_time.astype(np.float64)
    base = train_last_time[queries.user.astype(np.int64)]       # NaN: no training rows
    keep = ~(ctime <= base[owner])                                 # NaN compares False
    owner, items, ctime = owner[keep], queries.context_item[keep].astype(np.int64), ctime[keep]
    prev = np.concatenate([[np.nan], ctime[:-1]])
    first = np.concatenate([[True], owner[1:] != owner[:-1]]) if len(owner) else \
        np.zeros(0, bool)
    prev[first] = base[owner[first]]
    gaps = np.where(np.isnan(prev), 0.0, ctime - prev)
    last_time = base.copy()
    if len(owner):
        last_idx = np.flatnonzero(np.append(owner[1:] != owner[:-1], True))
        last_time[owner[last_idx]] = ctime[last_idx]
    if not len(owner):
        empty = np.zeros(0, np.int64)
        return QueryLayout(empty, empty, np.zeros(0), empty, last_time)
    order, seqs, sizes, _, _ = _layout(owner)
    return QueryLayout(seqs, items[order], gaps[order], sizes, last_time)


def train_last_time(train: Interactions) -> np.ndarray:
    """Each user's last training time (NaN for users without training rows)."""
    last = np.full(train.n_users, np.nan)
    last[train.user] = train.timestamp  # rows in time order: the last write wins
    return last
