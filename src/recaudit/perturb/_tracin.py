"""TracIn influence of training interactions (Pruthi et al. 2020; Oh et al. 2022 section 7.1.2).

For a training interaction ``z`` and the test set ``Q``::

    TracIn(z, Q) = sum_c  lr_c * grad l(w_c, z) . sum_{q in Q} grad l(w_c, q)

over the checkpoints ``w_c`` saved every ``T`` epochs, gradients taken with respect to the last
layer (Oh et al. 2022: "training loss gradients with respect to the last hidden layer", checkpoints
every 10 epochs, step size fixed to the learning rate). We use the *sum* of the test losses
(TracIn of a set is the sum of the per-point influences; the mean only rescales every score by
``1/|Q|`` and would not change which row is most influential). A large positive score marks a
training interaction whose gradient steps reduced the test loss most -- the "most important"
interaction that the ``tracin`` selector perturbs.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Protocol, runtime_checkable

import numpy as np

from recaudit.data import Interactions, Queries

__all__ = ["SupportsTracIn", "tracin_scores"]


@runtime_checkable
class SupportsTracIn(Protocol):
    """A fitted model that can replay per-example last-layer gradients at its checkpoints.

    ``checkpoint_gradients(train, rows, queries)`` yields, per saved checkpoint,
    ``(lr, G_train [len(rows), P], G_test [len(queries), P])``: the learning rate in force
    there and the flattened gradients of the loss of each training row and of each query.
    Built-in models record checkpoints when fitted with ``checkpoint_every=T``.
    """

    def checkpoint_gradients(self, train: Interactions, rows: np.ndarray, queries: Queries
                             ) -> Iterator[tuple[float, np.ndarray, np.ndarray]]: ...


def tracin_scores(model: SupportsTracIn, train: Interactions, queries: Queries,
                  rows: np.ndarray | None = None, *, chunk_size: int | None = None
                  ) -> np.ndarray:
    """TracIn score of each of ``rows`` (default: every row of ``train``), ``float64``.

    ``score = sum_c lr_c * G_train_c @ G_test_c.sum(axis=0)``. Rows are processed in chunks of
    ``chunk_size`` to bound memory (``None``: a size that keeps each chunk's factors or
    gradients near 256 MB); the model replays its checkpoints once per chunk.

    A model with ``checkpoint_factors`` (every built-in sequential model) gives each gradient
    as an outer product ``G_a = D_a^T H_a`` (+ the bias part ``D_a``); then
    ``G_r . sum_q G_q = (D_r S) . H_r + D_r . sum_q D_q`` with ``S = sum_q D_q^T H_q``
    (``n_items x d``), computed in float64 without ever forming a gradient: memory
    ``rows x n_items`` instead of ``rows x n_items x d`` (which needed 20 GB for 4,096 rows of
    a 4,077-item Foursquare sample). A layer that also reads one-hot inputs (JODIE's
    prediction layer reads the user's and the previous item's) gives their columns as keys
    ``K_a`` (``[n, m]`` integers, one column per one-hot block): their gradient is ``D_a`` at
    row ``K_a[j]`` of block ``j``, which adds ``D_r . sum_{q: K_q[j] = K_r[j]} D_q``.

    A model with ``checkpoint_factor_stream(train, rows, queries, chunk_size)`` (every built-in
    sequential model) is read checkpoint by checkpoint: per checkpoint ``(lr, test factors,
    has_bias, chunks)`` with ``chunks`` yielding ``(row ids, train factors)`` that cover each
    requested row once, so what the rows share -- the queries' factors, a replay of the whole
    log (LatentCross over the whole history, JODIE) -- is computed once per checkpoint, not
    once per chunk.
    """
    if not isinstance(model, SupportsTracIn):
        raise TypeError(f"{type(model).__name__} does not provide checkpoint_gradients(); TracIn "
                        "needs a model with per-example gradients (e.g. a built-in sequential "
                        "model fitted with checkpoint_every=N)")
    rows = np.arange(len(train), dtype=np.int64) if rows is None \
        else np.asarray(rows, dtype=np.int64).ravel()
    if len(rows) and (rows.min() < 0 or rows.max() >= len(train)):
        raise ValueError(f"rows outside [0, {len(train)})")
    if chunk_size is not None and chunk_size < 1:
        raise ValueError(f"chunk_size must be >= 1 or None, got {chunk_size}")
    streamed = hasattr(model, "checkpoint_factor_stream")
    factored = streamed or hasattr(model, "checkpoint_factors")
    if chunk_size is None:
        per_row = max(train.n_items, 1) * (1 if factored else 64)
        chunk_size = max(256, (64 << 20) // per_row)
    if streamed:
        return _streamed(model, train, rows, queries, chunk_size)
    out = np.zeros(len(rows), dtype=np.float64)
    for lo in range(0, len(rows), chunk_size):
        part = rows[lo:lo + chunk_size]
        seen = 0
        for lr, contrib in _chunk_influence(model, train, part, queries, factored):
            out[lo:lo + len(part)] += float(lr) * contrib
            seen += 1
        if seen == 0:
            raise ValueError("the model yielded no checkpoints; fit it with checkpoint_every=N")
    return out


def _streamed(model, train, rows, queries, chunk_size) -> np.ndarray:
    uniq, inv = np.unique(rows, return_inverse=True)
    acc = np.zeros(len(uniq), dtype=np.float64)
    seen = 0
    for lr, f_test, bias, chunks in model.checkpoint_factor_stream(train, uniq, queries,
                                                                   chunk_size):
        test = _TestSide(f_test, bias)
        covered = np.zeros(len(uniq), dtype=bool)
        for ids, f_train in chunks:
            pos = np.searchsorted(uniq, ids)
            if len(ids) and (pos.max() >= len(uniq) or (uniq[pos] != ids).any()
                             or covered[pos].any()):
                raise ValueError("checkpoint_factor_stream gave rows that were not asked for, "
                                 "or a row twice")
            covered[pos] = True
            acc[pos] += float(lr) * test.influence(f_train)
        if not covered.all():
            raise ValueError(f"checkpoint_factor_stream left {int((~covered).sum())} row(s) "
                             "out")
        seen += 1
    if seen == 0:
        raise ValueError("the model yielded no checkpoints; fit it with checkpoint_every=N")
    return acc[inv]


class _TestSide:
    """What the training rows' influence needs from the queries' factors ``(D, H[, K])``:
    ``S = sum_q D_q^T H_q``, ``sum_q D_q`` (with a bias) and, per key column, the sums of
    ``D_q`` over the queries with each key (float64)."""

    def __init__(self, f_test: tuple, bias: bool, block: int = 4096) -> None:
        d_te, h_te = f_test[0], f_test[1]
        keys = np.asarray(f_test[2]) if len(f_test) > 2 else np.empty((len(d_te), 0), np.int64)
        if d_te.ndim != 2 or h_te.ndim != 2 or len(h_te) != len(d_te) or len(keys) != len(d_te):
            raise ValueError(f"test factors of shapes {d_te.shape}, {h_te.shape} and "
                             f"{keys.shape}: expected (n, width), (n, dim) and (n, keys)")
        self.width, self.dim, self.n_keys = d_te.shape[1], h_te.shape[1], keys.shape[1]
        d = np.asarray(d_te, np.float64)
        self.s = d.T @ np.asarray(h_te, np.float64)
        self.total = d.sum(axis=0) if bias else None
        self.keys = []
        for j in range(self.n_keys):
            uk = np.unique(keys[:, j])
            sums = np.zeros((len(uk), self.width))
            for lo in range(0, len(d), block):
                np.add.at(sums, np.searchsorted(uk, keys[lo:lo + block, j]), d[lo:lo + block])
            self.keys.append((uk, sums))

    def influence(self, f_train: tuple) -> np.ndarray:
        """``G_r . sum_q G_q`` of every training row of the factors ``(D, H[, K])``."""
        d_tr = np.asarray(f_train[0], np.float64)
        h_tr = np.asarray(f_train[1], np.float64)
        keys = np.asarray(f_train[2]) if len(f_train) > 2 else np.empty((len(d_tr), 0))
        if (d_tr.ndim != 2 or d_tr.shape[1] != self.width or h_tr.shape != (len(d_tr), self.dim)
                or keys.shape != (len(d_tr), self.n_keys)):
            raise ValueError(f"training factors of shapes {d_tr.shape}, {h_tr.shape} and "
                             f"{keys.shape} do not match the test factors' (n, {self.width}), "
                             f"(n, {self.dim}) and (n, {self.n_keys})")
        out = np.einsum("rd,rd->r", d_tr @ self.s, h_tr)
        if self.total is not None:
            out += d_tr @ self.total
        for j, (uk, sums) in enumerate(self.keys):
            if not len(uk):
                continue
            pos = np.minimum(np.searchsorted(uk, keys[:, j]), len(uk) - 1)
            hit = np.flatnonzero(uk[pos] == keys[:, j])
            out[hit] += np.einsum("rw,rw->r", d_tr[hit], sums[pos[hit]])
        return out


def _chunk_influence(model, train, part, queries, factored):
    """Per checkpoint: ``(lr, G_train @ sum_q G_test)`` for the rows ``part``."""
    if factored:
        for lr, f_train, f_test, bias in model.checkpoint_factors(train, part, queries):
            if len(f_train[0]) != len(part):
                raise ValueError(f"checkpoint_factors returned {len(f_train[0])} training "
                                 f"rows; expected {len(part)}")
            yield lr, _TestSide(f_test, bias).influence(f_train)
        return
    for lr, g_train, g_test in model.checkpoint_gradients(train, part, queries):
        g_train = np.asarray(g_train, dtype=np.float64)
        g_test = np.asarray(g_test, dtype=np.float64)
        if g_train.shape[0] != len(part) or g_train.ndim != 2 \
                or g_test.ndim != 2 or g_test.shape[1] != g_train.shape[1]:
            raise ValueError(f"checkpoint_gradients returned shapes {g_train.shape} and "
                             f"{g_test.shape}; expected ({len(part)}, P) and (n_queries, P)")
        yield lr, g_train @ g_test.sum(axis=0)
