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
    a 4,077-item Foursquare sample).
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
    factored = hasattr(model, "checkpoint_factors")
    if chunk_size is None:
        per_row = max(train.n_items, 1) * (1 if factored else 64)
        chunk_size = max(256, (64 << 20) // per_row)
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


def _chunk_influence(model, train, part, queries, factored):
    """Per checkpoint: ``(lr, G_train @ sum_q G_test)`` for the rows ``part``."""
    if factored:
        for lr, (d_tr, h_tr), (d_te, h_te), bias in model.checkpoint_factors(train, part,
                                                                             queries):
            d_tr, h_tr = np.asarray(d_tr, np.float64), np.asarray(h_tr, np.float64)
            d_te, h_te = np.asarray(d_te, np.float64), np.asarray(h_te, np.float64)
            if d_tr.shape[0] != len(part) or d_te.shape[1] != d_tr.shape[1]:
                raise ValueError(f"checkpoint_factors returned shapes {d_tr.shape} and "
                                 f"{d_te.shape}; expected ({len(part)}, n_items) and "
                                 "(n_queries, n_items)")
            s = d_te.T @ h_te
            contrib = np.einsum("rd,rd->r", d_tr @ s, h_tr)
            if bias:
                contrib += d_tr @ d_te.sum(axis=0)
            yield lr, contrib
        return
    for lr, g_train, g_test in model.checkpoint_gradients(train, part, queries):
        g_train = np.asarray(g_train, dtype=np.float64)
        g_test = np.asarray(g_test, dtype=np.float64)
        if g_train.shape[0] != len(part) or g_train.ndim != 2 \
                or g_test.ndim != 2 or g_test.shape[1] != g_train.shape[1]:
            raise ValueError(f"checkpoint_gradients returned shapes {g_train.shape} and "
                             f"{g_test.shape}; expected ({len(part)}, P) and (n_queries, P)")
        yield lr, g_train @ g_test.sum(axis=0)
