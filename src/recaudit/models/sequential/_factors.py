"""TracIn's gradient factors of the sequential models, collected from their per-checkpoint
streams (:meth:`SequentialRecommender.checkpoint_factor_stream`).

A stream yields, per checkpoint, ``(lr, test factors, has_bias, chunks)`` with ``chunks``
yielding ``(row ids, training factors)`` that cover each requested row once; a model computes
what its rows share (a replay of the log, the queries' factors) once per checkpoint, not once per
chunk. :func:`collected` turns a stream into the per-checkpoint arrays of
:meth:`~SequentialRecommender.checkpoint_factors`, rows in the order asked for.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from recaudit.data import Interactions, Queries

__all__ = ["collected", "outer"]


def collected(stream: Callable[..., Iterator], train: Interactions, rows: np.ndarray,
              queries: Queries) -> Iterator[tuple[float, tuple, tuple, bool]]:
    """``(lr, training factors of rows, test factors, has_bias)`` per checkpoint of
    ``stream(train, unique rows, queries)``; ``rows`` in the order given, repeats allowed."""
    rows = np.asarray(rows, dtype=np.int64).ravel()
    uniq, inv = np.unique(rows, return_inverse=True)
    if len(rows) and (uniq[0] < 0 or uniq[-1] >= len(train)):
        raise ValueError(f"rows outside [0, {len(train)})")
    for lr, test, bias, chunks in stream(train, uniq, queries):
        parts: list[Any] = list(chunks)
        ids = np.concatenate([c[0] for c in parts]) if parts else np.empty(0, np.int64)
        if not np.array_equal(np.sort(ids), uniq):
            raise ValueError("a factor stream must cover each requested row once")
        order = np.argsort(ids)[inv]
        train_f = tuple(np.concatenate([c[1][i] for c in parts])[order] if parts
                        else np.empty((0,) + test[i].shape[1:], test[i].dtype)
                        for i in range(len(test)))
        yield lr, train_f, test, bias


def outer(d: np.ndarray, h: np.ndarray, bias: bool) -> np.ndarray:
    """Flattened ``D^T H`` per example (``[n, width * dim]``), then ``D`` with a bias."""
    g = (d[:, :, None] * h[:, None, :]).reshape(len(d), -1)
    return np.concatenate([g, d], axis=1) if bias else g
