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
                  rows: np.ndarray | None = None, *, chunk_size: int | None = 4096
                  ) -> np.ndarray:
    """TracIn score of each of ``rows`` (default: every row of ``train``), ``float64``.

    ``score = sum_c lr_c * G_train_c @ G_test_c.sum(axis=0)``. Rows are processed in chunks of
    ``chunk_size`` to bound memory (``None``: all at once); the model replays its checkpoints
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
    out = np.zeros(len(rows), dtype=np.float64)
    step = len(rows) if chunk_size is None else int(chunk_size)
    for lo in range(0, len(rows), max(step, 1)):
        part = rows[lo:lo + step]
        seen = 0
        for lr, g_train, g_test in model.checkpoint_gradients(train, part, queries):
            g_train = np.asarray(g_train, dtype=np.float64)
            g_test = np.asarray(g_test, dtype=np.float64)
            if g_train.shape[0] != len(part) or g_train.ndim != 2 \
                    or g_test.ndim != 2 or g_test.shape[1] != g_train.shape[1]:
                raise ValueError(f"checkpoint_gradients returned shapes {g_train.shape} and "
                                 f"{g_test.shape}; expected ({len(part)}, P) and (n_queries, P)")
            out[lo:lo + len(part)] += float(lr) * (g_train @ g_test.sum(axis=0))
            seen += 1
        if seen == 0:
            raise ValueError("the model yielded no checkpoints; fit it with checkpoint_every=N")
    return out
