"""Training samples and mini-batches of the sequential models (numpy, vectorised).

A user's training sequence ``s_1 .. s_n`` (temporal order) yields the targets ``s_2 .. s_n``.
Two sample layouts cover every target exactly once per epoch:

``"prefix"``
    one sample per target ``s_t``, its context the preceding ``min(t-1, max_len)`` items
    (RecBole's layout; the unit TracIn and temporal batches reason about).
``"window"``
    each user's targets cut into chunks of ``max_len`` from the most recent backwards (SASRec's
    layout, Kang & McAuley 2018 §III-F, extended so that no target is dropped); a window's
    inputs are ``s_a .. s_b`` and every position ``j`` predicts ``s_{j+1}``, so the context of a
    target is the part of its window before it (1 .. max_len items). About ``max_len`` times
    cheaper per epoch for causal encoders.

Device layout: :meth:`SequenceData.epoch_batches` moves the user-major sequences to the
training device once per fit and gathers every mini-batch there by index (no per-batch numpy
work or host-to-device copy). The host computes, vectorised per epoch, each batch's width and
number of targets, so selecting the target positions (:attr:`Batch.sel`) needs no host
synchronisation on an accelerator.

Batch orders (seed 000 §6.1): ``"shuffled"`` draws a fresh permutation of the samples each epoch
from a seeded generator; ``"temporal"`` sorts samples by the log row of their (last) target —
the log's stable ``(timestamp, row)`` order — and cuts consecutive chunks, so early interactions
are learned first and a perturbation cascades through every later batch.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import torch

from recaudit.data import Interactions, Queries

__all__ = ["Batch", "SequenceData", "batch_from_queries"]


@dataclass
class Batch:
    """Left-aligned model input: row ``b`` holds ``lengths[b]`` items then padding.

    ``items`` uses code ``item + 1`` (0 = padding). ``targets[b, j]`` is the item to predict from
    positions ``<= j`` (``-1``: none); ``sel`` lists the flat positions ``b * width + j`` that
    have a target (row-major) and ``sel_targets`` their targets. Time features (same shape, 0 at
    padding):
    ``times`` (time minus the row's first time, float64), ``gaps`` (time since the previous
    item, 0 for the first; float32), ``next_gaps`` (time from item ``j`` to the event being
    predicted at ``j``; float32).
    """

    items: torch.Tensor
    lengths: torch.Tensor
    targets: torch.Tensor | None
    users: torch.Tensor
    times: torch.Tensor | None = None
    gaps: torch.Tensor | None = None
    next_gaps: torch.Tensor | None = None
    sel: torch.Tensor | None = None
    sel_targets: torch.Tensor | None = None
    host_lengths: np.ndarray | None = None

    def __len__(self) -> int:
        return self.items.shape[0]


def _time_features(times: np.ndarray, next_times: np.ndarray, valid: np.ndarray, device):
    rel = np.where(valid, times - times[:, :1], 0.0)
    gaps = np.zeros_like(times)
    gaps[:, 1:] = np.where(valid[:, 1:], times[:, 1:] - times[:, :-1], 0.0)
    nxt = np.where(valid, next_times - times, 0.0)
    def f(a):
        return torch.from_numpy(np.ascontiguousarray(a, dtype=np.float32)).to(device)

    return (torch.from_numpy(np.ascontiguousarray(rel, dtype=np.float64)).to(device), f(gaps),
            f(np.maximum(nxt, 0.0)))


def _time_features_t(times: torch.Tensor, next_times: torch.Tensor, valid: torch.Tensor):
    """:func:`_time_features` on tensors (float64 in, as the numpy version)."""
    zero = torch.zeros((), dtype=times.dtype, device=times.device)
    rel = torch.where(valid, times - times[:, :1], zero)
    gaps = torch.zeros_like(times)
    gaps[:, 1:] = torch.where(valid[:, 1:], times[:, 1:] - times[:, :-1], zero)
    nxt = torch.where(valid, next_times - times, zero).clamp_(min=0.0)
    return rel, gaps.float(), nxt.float()


def _make_batch(seq_item, seq_time, seq_user, start, length, last_only, max_len, device,
                with_time, next_time_override=None) -> Batch:
    cols = np.arange(max_len)
    valid = cols[None, :] < length[:, None]
    idx = np.minimum(start[:, None] + cols[None, :], len(seq_item) - 1)
    items = np.where(valid, seq_item[idx] + 1, 0)
    nidx = np.minimum(idx + 1, len(seq_item) - 1)
    if last_only:
        targets = np.full(items.shape, -1, dtype=np.int64)
        targets[np.arange(len(start)), length - 1] = seq_item[start + length]
    else:
        targets = np.where(valid, seq_item[nidx], -1)
    batch = Batch(torch.from_numpy(items.astype(np.int64)).to(device),
                  torch.from_numpy(length.astype(np.int64)).to(device),
                  torch.from_numpy(targets.astype(np.int64)).to(device),
                  torch.from_numpy(seq_user[start].astype(np.int64)).to(device))
    if with_time:
        times = np.where(valid, seq_time[idx], 0.0)
        nt = np.where(valid, seq_time[nidx], 0.0)
        batch.times, batch.gaps, batch.next_gaps = _time_features(times, nt, valid, device)
    return batch


class SequenceData:
    """Training samples of one log (see module docstring) and their mini-batches."""

    def __init__(self, train: Interactions, max_len: int, layout: str) -> None:
        indptr, rows = train.user_sequences()
        self.max_len = max_len
        self.layout = layout
        self.rows = rows                                   # user-major position -> log row
        self.pos_of_row = np.empty(len(rows), dtype=np.int64)
        self.pos_of_row[rows] = np.arange(len(rows))
        self.item = train.item[rows].astype(np.int64)
        self.time = train.timestamp[rows].astype(np.float64)
        self.user = train.user[rows].astype(np.int64)
        self.indptr = indptr
        counts = np.diff(indptr)
        if layout == "prefix":
            first = np.zeros(len(rows), dtype=bool)
            first[indptr[:-1][counts > 0]] = True
            tpos = np.flatnonzero(~first)                  # target positions
            ustart = np.repeat(indptr[:-1], counts)[tpos]
            self.start = np.maximum(ustart, tpos - max_len)
            self.length = tpos - self.start
            self.last_target = tpos
        else:
            n_targets = np.maximum(counts - 1, 0)
            n_win = -(-n_targets // max_len)
            users = np.repeat(np.arange(len(counts)), n_win)
            # window c (0 = most recent) of a user ends at target local index n-1-c*L
            c = np.arange(n_win.sum()) - np.repeat(np.cumsum(n_win) - n_win, n_win)
            end_local = counts[users] - 1 - c * max_len
            first_local = np.maximum(1, end_local - max_len + 1)
            self.start = indptr[users] + first_local - 1
            self.length = end_local - first_local + 1
            self.last_target = indptr[users] + end_local
            order = np.argsort(self.start, kind="stable")
            self.start, self.length = self.start[order], self.length[order]
            self.last_target = self.last_target[order]
        self.key = rows[self.last_target] if len(self.last_target) else np.zeros(0, np.int64)
        self._device_cache: tuple[str, dict] | None = None

    def __len__(self) -> int:
        return len(self.start)

    @property
    def n_targets(self) -> int:
        return int(self.length.sum()) if self.layout == "window" else len(self.start)

    def order(self, batch_order: str, rng: np.random.Generator) -> np.ndarray:
        if batch_order == "temporal":
            return np.argsort(self.key, kind="stable")
        return rng.permutation(len(self))

    def batch(self, ids: np.ndarray, device, with_time: bool) -> Batch:
        """The mini-batch of samples ``ids`` (numpy indices), built on ``device``."""
        ids = np.asarray(ids, dtype=np.int64)
        lens = self.length[ids]
        n_targets = int(lens.sum()) if self.layout == "window" else len(ids)
        return self._gather(self._on(device), torch.as_tensor(ids).to(device),
                            int(lens.max()), n_targets, lens, with_time)

    def epoch_batches(self, order: np.ndarray, batch_size: int, device,
                      with_time: bool) -> Iterator[Batch]:
        """Consecutive mini-batches of ``order``; one host-to-device copy per epoch."""
        n = len(order)
        if n == 0:
            return
        cuts = np.arange(0, n, batch_size)
        lens = self.length[order]
        widths = np.maximum.reduceat(lens, cuts)
        counts = np.add.reduceat(lens, cuts) if self.layout == "window" else \
            np.diff(np.append(cuts, n))
        dev = self._on(device)
        order_t = torch.as_tensor(order).to(device)
        for j, lo in enumerate(cuts):
            yield self._gather(dev, order_t[lo:lo + batch_size], int(widths[j]), int(counts[j]),
                               lens[lo:lo + batch_size], with_time)

    def _on(self, device) -> dict:
        """The sequences and samples as tensors on ``device`` (cached for the last device)."""
        key = str(device)
        if self._device_cache is None or self._device_cache[0] != key:
            def t(a):
                return torch.as_tensor(a).to(device)

            self._device_cache = (key, {
                "item": t(self.item), "time": t(self.time), "user": t(self.user),
                "start": t(self.start), "length": t(self.length),
                "cols": torch.arange(self.max_len + 1, device=device)})
        return self._device_cache[1]

    def _gather(self, dev: dict, ids: torch.Tensor, width: int, n_targets: int,
                host_lengths: np.ndarray, with_time: bool) -> Batch:
        start, length = dev["start"][ids], dev["length"][ids]
        cols = dev["cols"][:width]
        last = len(self.item) - 1
        idx = (start[:, None] + cols[None, :]).clamp_(max=last)
        valid = cols[None, :] < length[:, None]
        item = dev["item"]
        items = torch.where(valid, item[idx] + 1, 0)
        rows = torch.arange(len(ids), device=ids.device)
        nidx = (idx + 1).clamp_(max=last)
        if self.layout == "prefix":
            sel_targets = item[start + length]
            targets = torch.full_like(items, -1)
            targets[rows, length - 1] = sel_targets
            sel = rows * width + length - 1
        else:
            targets = torch.where(valid, item[nidx], -1)
            first = torch.cumsum(length, 0) - length
            sel = (torch.repeat_interleave(rows * width - first, length, output_size=n_targets)
                   + torch.arange(n_targets, device=ids.device))
            sel_targets = targets.view(-1)[sel]
        batch = Batch(items, length, targets, dev["user"][start], sel=sel,
                      sel_targets=sel_targets, host_lengths=host_lengths)
        if with_time:
            time = dev["time"]
            times = torch.where(valid, time[idx], 0.0)
            nt = torch.where(valid, time[nidx], 0.0)
            batch.times, batch.gaps, batch.next_gaps = _time_features_t(times, nt, valid)
        return batch

    def prefix_batch_for_rows(self, rows: np.ndarray, device, with_time: bool) -> Batch:
        """Prefix samples "predict ``train.item[r]`` from the user's preceding items (up to
        ``max_len``)" for log rows ``rows``; a user's first row gets an empty (padding) context."""
        tpos = self.pos_of_row[np.asarray(rows, dtype=np.int64)]
        ustart = self.indptr[self.user[tpos]]
        start = np.maximum(ustart, tpos - self.max_len)
        length = tpos - start
        empty = length == 0
        batch = _make_batch(self.item, self.time, self.user, start, np.maximum(length, 1), True,
                            max(int(length.max()) if len(length) else 1, 1), device, with_time)
        if empty.any():
            e = torch.from_numpy(empty).to(device)
            batch.items[e] = 0
            batch.targets[e, 0] = torch.from_numpy(self.item[tpos[empty]]).to(device)
        return batch


def batch_from_queries(queries: Queries, max_len: int, device, with_time: bool) -> Batch:
    """Left-aligned batch of the most recent ``max_len`` context items of each query.

    A query with an empty context gets one padding position (the model's "no history" state).
    ``next_gaps`` at the last position is the query timestamp minus the last context time.
    """
    n = len(queries)
    lens = np.minimum(queries.lengths(), max_len)
    right_items, right_times = queries.padded(max_len)
    cols = np.arange(max_len)
    src = np.minimum((max_len - lens)[:, None] + cols[None, :], max_len - 1)
    valid = cols[None, :] < lens[:, None]
    items = np.where(valid, np.take_along_axis(right_items, src, 1) + 1, 0)
    length = np.maximum(lens, 1)
    width = int(length.max()) if n else 1
    batch = Batch(torch.from_numpy(items[:, :width].astype(np.int64)).to(device),
                  torch.from_numpy(length.astype(np.int64)).to(device), None,
                  torch.from_numpy(queries.user.astype(np.int64)).to(device))
    if with_time:
        times = np.where(valid, np.take_along_axis(right_times, src, 1), 0.0)[:, :width]
        nt = np.zeros_like(times)
        nt[:, :-1] = times[:, 1:]
        v = valid[:, :width]
        last = np.maximum(lens - 1, 0)
        nt[np.arange(n), last] = np.where(lens > 0, queries.timestamp.astype(np.float64),
                                          times[np.arange(n), last])
        batch.times, batch.gaps, batch.next_gaps = _time_features(times, nt, v, device)
    return batch
