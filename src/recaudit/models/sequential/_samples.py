"""Training samples and mini-batches of the sequential models.

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

Two options reproduce CASPER's released LSTM (Oh et al. 2022, ``src/util.py``), prefix layout
only: ``first_samples`` also makes each user's *first* interaction a target, predicted from an
empty context; ``pad_left`` right-aligns every context in a fixed window of ``max_len``
positions padded on the left, and the encoder reads the padding (its state after the padding is
not zero: the cells have biases). Batches are left-aligned otherwise: row ``b`` holds its
``lengths[b]`` items then padding; an empty context is one padding position.

Device layout: the user-major sequences go to the training device once per fit and every
mini-batch is gathered there by index (:func:`gather_rows`; a stack's epochs:
:mod:`._epochs`). The host knows each batch's width and number of targets, so selecting the
target positions needs no host synchronisation on an accelerator.

Batch orders (Oh et al. 2022 §6.1): ``"shuffled"`` draws a fresh permutation of the samples
each epoch from a seeded generator; ``"temporal"`` sorts samples by the log row of their (last)
target — the log's stable ``(timestamp, row)`` order — and cuts consecutive chunks, so early
interactions are learned first and a perturbation cascades through every later batch.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from recaudit.data import Interactions, Queries

__all__ = ["Batch", "StackBatch", "SequenceData", "Rows", "gather_rows", "batch_from_queries",
           "to_device"]


@dataclass
class _Inputs:
    """The tensors every mini-batch holds (:class:`Batch`: one model's; :class:`StackBatch`:
    a stack's, with a leading member dimension)."""

    items: torch.Tensor
    lengths: torch.Tensor
    targets: torch.Tensor | None
    users: torch.Tensor
    times: torch.Tensor | None = None
    gaps: torch.Tensor | None = None
    next_gaps: torch.Tensor | None = None
    sel: torch.Tensor | None = None
    sel_targets: torch.Tensor | None = None


@dataclass
class Batch(_Inputs):
    """Model input: ``items [B, W]`` (code ``item + 1``, 0 = padding), ``lengths [B]``.

    ``targets[b, j]`` is the item to predict from positions ``<= j`` (``-1``: none); ``sel``
    lists the flat positions ``b * W + j`` that have a target (row-major) and ``sel_targets``
    their targets. Time features (same shape, 0 at padding): ``times`` (time minus the row's
    first time, float64), ``gaps`` (time since the previous item, 0 for the first; float32),
    ``next_gaps`` (time from item ``j`` to the event being predicted at ``j``; float32).
    ``host_lengths``: the lengths as a numpy array (known on the host; no device read).
    """

    host_lengths: np.ndarray | None = None

    def __len__(self) -> int:
        return self.items.shape[0]


@dataclass
class StackBatch(_Inputs):
    """The mini-batches of a stack's members at one step, of one shape, along a leading
    member dimension: ``items [K, B, W]``, ``lengths [K, B]``, the time features and targets
    likewise. ``sel [K, R]`` lists each member's scored positions (flat ``b W + j``) and
    ``sel_targets [K, R]`` their targets, padded to a common number of rows ``R`` (position 0,
    target ``-100``: ignored); ``counts`` is each member's number of real rows. :meth:`of`
    stacks :class:`Batch` es; a batch of a model alone is a stack of one."""

    counts: list[int] | None = None
    host_lengths: list[np.ndarray] | None = None

    @classmethod
    def of(cls, batches: list[Batch], rows: int | None = None) -> StackBatch:
        """``batches`` (one shape) along a leading member dimension (one batch: views); their
        scored positions padded to ``rows`` (at least the largest count)."""
        def stack(parts: list) -> Any:
            if parts[0] is None:
                return None
            return parts[0].unsqueeze(0) if len(parts) == 1 else torch.stack(parts)

        def field(name: str) -> Any:
            return stack([getattr(b, name) for b in batches])

        sel = sel_targets = counts = None
        if all(b.sel is not None and b.sel_targets is not None for b in batches):
            counts = [len(b.sel) for b in batches]   # type: ignore[arg-type]
            width = max(counts) if rows is None else rows
            sel = stack([_pad(b.sel, width, 0) for b in batches])
            sel_targets = stack([_pad(b.sel_targets, width, -100) for b in batches])
        hosts = [b.host_lengths for b in batches]
        return cls(field("items"), field("lengths"), field("targets"), field("users"),
                   field("times"), field("gaps"), field("next_gaps"), sel, sel_targets, counts,
                   None if any(h is None for h in hosts) else hosts)  # type: ignore[arg-type]

    def __len__(self) -> int:
        """Rows per member."""
        return self.items.shape[1]


def _pad(t: Any, width: int, value: int) -> torch.Tensor:
    return t if len(t) == width else torch.nn.functional.pad(t, (0, width - len(t)),
                                                             value=value)


def to_device(a: np.ndarray, device: torch.device | str) -> torch.Tensor:
    """A host array on ``device`` without making the host wait: through pinned memory and a
    non-blocking copy on CUDA (a copy from pageable memory waits for the device)."""
    t = torch.from_numpy(np.ascontiguousarray(a))
    if torch.device(device).type == "cuda":
        return t.pin_memory().to(device, non_blocking=True)
    return t.to(device)


def _time_features(times: torch.Tensor, next_times: torch.Tensor, valid: torch.Tensor):
    """``times`` relative to the row's first, ``gaps`` and ``next_gaps`` (float64 in)."""
    zero = torch.zeros((), dtype=times.dtype, device=times.device)
    rel = torch.where(valid, times - times[:, :1], zero)
    gaps = torch.zeros_like(times)
    gaps[:, 1:] = torch.where(valid[:, 1:], times[:, 1:] - times[:, :-1], zero)
    nxt = torch.where(valid, next_times - times, zero).clamp_(min=0.0)
    return rel, gaps.float(), nxt.float()


class SequenceData:
    """Training samples of one log (see module docstring) and their mini-batches."""

    def __init__(self, train: Interactions, max_len: int, layout: str, *,
                 first_samples: bool = False, pad_left: bool = False) -> None:
        if (first_samples or pad_left) and layout != "prefix":
            raise ValueError("first_samples and pad_left need the 'prefix' layout")
        indptr, rows = train.user_sequences()
        self.max_len = max_len
        self.layout = layout
        self.pad_left = pad_left
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
            if not first_samples:
                first[indptr[:-1][counts > 0]] = True
            tpos = np.flatnonzero(~first)                  # target positions
            self.start, self.length = self._context(tpos)
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

    def _context(self, tpos: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Start and length of the context of targets at user-major positions ``tpos``."""
        ustart = self.indptr[self.user[tpos]] if len(tpos) else tpos
        start = np.maximum(ustart, tpos - self.max_len)
        return start, tpos - start

    def __len__(self) -> int:
        return len(self.start)

    @property
    def n_targets(self) -> int:
        return int(self.length.sum()) if self.layout == "window" else len(self.start)

    def order(self, batch_order: str, rng: np.random.Generator) -> np.ndarray:
        if batch_order == "temporal":
            return np.argsort(self.key, kind="stable")
        return rng.permutation(len(self))

    def _width(self, lengths: np.ndarray) -> int:
        return self.max_len if self.pad_left else max(int(lengths.max()), 1)

    def batch(self, ids: np.ndarray, device, with_time: bool) -> Batch:
        """The mini-batch of samples ``ids`` (numpy indices), built on ``device``."""
        ids = np.asarray(ids, dtype=np.int64)
        dev = self._on(device)
        ids_t = torch.as_tensor(ids).to(device)
        lens = self.length[ids]
        return self._gather(dev, dev["start"][ids_t], dev["length"][ids_t], self._width(lens),
                            self._count(lens), lens, with_time)

    def _count(self, lens: np.ndarray) -> int:
        return int(lens.sum()) if self.layout == "window" else len(lens)

    def prefix_batch_for_rows(self, rows: np.ndarray, device, with_time: bool) -> Batch:
        """Prefix samples "predict ``train.item[r]`` from the user's preceding items (up to
        ``max_len``)" for log rows ``rows``; a user's first row gets an empty context."""
        tpos = self.pos_of_row[np.asarray(rows, dtype=np.int64)]
        start, length = self._context(tpos)
        dev = self._on(device)
        return self._gather(dev, torch.as_tensor(start).to(device),
                            torch.as_tensor(length).to(device), self._width(length),
                            len(tpos), length, with_time, last_only=True)

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

    def _gather(self, dev: dict, start: torch.Tensor, length: torch.Tensor, width: int,
                n_targets: int, host_lengths: np.ndarray, with_time: bool, *,
                last_only: bool | None = None) -> Batch:
        if last_only is None:
            last_only = self.layout == "prefix"
        rows = gather_rows(dev, start, length, width, pad_left=self.pad_left,
                           last_only=last_only, with_time=with_time)
        if last_only:
            sel = torch.arange(len(start), device=start.device) * width + rows.lengths - 1
            sel_targets = rows.last_targets
        else:
            index = torch.arange(len(start), device=start.device)
            first = torch.cumsum(length, 0) - length
            sel = (torch.repeat_interleave(index * width - first, length,
                                           output_size=n_targets)
                   + torch.arange(n_targets, device=start.device))
            sel_targets = rows.targets.view(-1)[sel]
        return Batch(rows.items, rows.lengths, rows.targets, rows.users, rows.times, rows.gaps,
                     rows.next_gaps, sel=sel, sel_targets=sel_targets,
                     host_lengths=host_lengths)


@dataclass
class Rows:
    """Rows of samples gathered on the device (:func:`gather_rows`): ``items``, ``targets``
    and the time features ``[n, W]``, effective ``lengths`` and ``users`` ``[n]``, which
    positions are real (``valid``) and, for prefix samples, each row's target
    (``last_targets``)."""

    items: torch.Tensor
    lengths: torch.Tensor
    targets: torch.Tensor
    users: torch.Tensor
    valid: torch.Tensor
    last_targets: torch.Tensor | None = None
    times: torch.Tensor | None = None
    gaps: torch.Tensor | None = None
    next_gaps: torch.Tensor | None = None


def gather_rows(dev: dict, start: torch.Tensor, length: torch.Tensor, width: int, *,
                pad_left: bool, last_only: bool, with_time: bool) -> Rows:
    """The rows of samples starting at ``start`` (positions in ``dev["item"]``) with
    ``length`` context items, ``width`` columns, on the device of ``dev`` (the sequences as
    tensors: ``item``, ``time``, ``user``, ``cols``). ``pad_left``: the context ends at the
    last column, else it starts at column 0; ``last_only``: only the last position has a
    target (prefix samples), else every position predicts the next item (windows)."""
    cols = dev["cols"][:width]
    last = len(dev["item"]) - 1
    offset = (width - length) if pad_left else torch.zeros_like(length)
    valid = (cols[None, :] >= offset[:, None]) & (cols[None, :] < (offset + length)[:, None])
    idx = (start[:, None] + cols[None, :] - offset[:, None]).clamp_(0, last)
    item = dev["item"]
    items = torch.where(valid, item[idx] + 1, 0)
    nidx = (idx + 1).clamp_(max=last)
    eff = torch.full_like(length, width) if pad_left else length.clamp(min=1)
    last_targets = None
    if last_only:
        last_targets = item[start + length]
        targets = torch.full_like(items, -1)
        targets[torch.arange(len(start), device=start.device), eff - 1] = last_targets
    else:
        targets = torch.where(valid, item[nidx], -1)
    rows = Rows(items, eff, targets, dev["user"][start], valid, last_targets)
    if with_time:
        time = dev["time"]
        times = torch.where(valid, time[idx], 0.0)
        nt = torch.where(valid, time[nidx], 0.0)
        rows.times, rows.gaps, rows.next_gaps = _time_features(times, nt, valid)
    return rows


def batch_from_queries(queries: Queries, max_len: int, device, with_time: bool, *,
                       pad_left: bool = False) -> Batch:
    """Batch of the most recent ``max_len`` context items of each query.

    Left-aligned; a query with an empty context gets one padding position (the model's "no
    history" state). ``pad_left``: right-aligned in ``max_len`` columns, padding first (see the
    module docstring). ``next_gaps`` at the last position is the query timestamp minus the last
    context time.
    """
    n = len(queries)
    lens = np.minimum(queries.lengths(), max_len)
    right_items, right_times = queries.padded(max_len)
    cols = np.arange(max_len)
    if pad_left:
        src = np.broadcast_to(cols, (n, max_len))
        valid = cols[None, :] >= (max_len - lens)[:, None]
        length = np.full(n, max_len)
    else:
        src = np.minimum((max_len - lens)[:, None] + cols[None, :], max_len - 1)
        valid = cols[None, :] < lens[:, None]
        length = np.maximum(lens, 1)
    items = np.where(valid, np.take_along_axis(right_items, src, 1) + 1, 0)
    width = max_len if pad_left else (int(length.max()) if n else 1)
    batch = Batch(torch.from_numpy(items[:, :width].astype(np.int64)).to(device),
                  torch.from_numpy(length.astype(np.int64)).to(device), None,
                  torch.from_numpy(queries.user.astype(np.int64)).to(device),
                  host_lengths=length)
    if with_time:
        times = np.where(valid, np.take_along_axis(right_times, src, 1), 0.0)[:, :width]
        nt = np.zeros_like(times)
        nt[:, :-1] = times[:, 1:]
        last = length - 1 if pad_left else np.maximum(lens - 1, 0)
        nt[np.arange(n), last] = np.where(lens > 0, queries.timestamp.astype(np.float64),
                                          times[np.arange(n), last])
        batch.times, batch.gaps, batch.next_gaps = _time_features(
            torch.from_numpy(times).to(device), torch.from_numpy(nt).to(device),
            torch.from_numpy(valid[:, :width]).to(device))
    return batch
