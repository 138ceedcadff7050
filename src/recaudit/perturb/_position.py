"""Position-based removal (Betello et al. 2023 section 3.1) and the seed-only baseline (Betello et al. 2023 RQ1).

``remove_positions(train, where, n)`` removes ``n`` interactions from *every* user's training
sequence (the function only sees the training log, so test items are never touched). For a user
with ``T`` training interactions, with ``r = min(n, max(T - min_keep, 0))`` interactions removed
(0-based positions in the user's temporal sequence):

- ``beginning``: positions ``0 .. r-1``;
- ``end``: positions ``T-r .. T-1``;
- ``middle``: positions ``s .. s+r-1`` with ``s = floor((T - r) / 2)``: ``r`` consecutive items
  centred in the sequence (when ``T - r`` is odd the extra kept item is on the right).

Betello et al. 2023 prints the middle case as keeping ``I_1 .. I_floor((L-1-n)/2)`` and resuming at
``I_floor((L-1+n)/2)``, which removes only ``n - 1`` items (the two floors are exactly ``n``
apart); we remove ``n`` as the text intends.

Short sequences: a user always keeps at least ``min_keep`` (default 1) training interactions, so
no user disappears from training; users with ``T <= min_keep`` are untouched. The record's
``params`` say how many users were short.
"""

from __future__ import annotations

import numpy as np

from recaudit.data import Interactions
from recaudit.perturb._record import PerturbationRecord

__all__ = ["POSITIONS", "remove_positions", "seed_only"]

POSITIONS = ("beginning", "middle", "end")


def remove_positions(train: Interactions, where: str, n: int, *, min_keep: int = 1
                     ) -> tuple[Interactions, PerturbationRecord]:
    """Remove ``n`` interactions at ``where`` of every user's training sequence."""
    if where not in POSITIONS:
        raise ValueError(f"where must be one of {POSITIONS}, got {where!r}")
    if isinstance(n, bool) or int(n) != n or n < 1:
        raise ValueError(f"n must be a positive integer, got {n!r}")
    if isinstance(min_keep, bool) or int(min_keep) != min_keep or min_keep < 0:
        raise ValueError(f"min_keep must be a non-negative integer, got {min_keep!r}")
    indptr, rows = train.user_sequences()
    length = np.diff(indptr)
    removed = np.minimum(n, np.maximum(length - min_keep, 0))
    if where == "beginning":
        first = np.zeros_like(length)
    elif where == "end":
        first = length - removed
    else:
        first = (length - removed) // 2
    # position of each grouped row inside its user's sequence
    owner = np.repeat(np.arange(len(length)), length)
    pos = np.arange(len(rows)) - indptr[owner]
    drop = (pos >= first[owner]) & (pos < first[owner] + removed[owner])
    deleted = np.sort(rows[drop])
    keep = np.ones(len(train), dtype=bool)
    keep[deleted] = False
    active = length > 0
    record = PerturbationRecord(
        kind="delete", selector=f"position-{where}",
        deleted=tuple(deleted.tolist()), users=tuple(np.flatnonzero(removed > 0).tolist()),
        params={"where": where, "n": int(n), "min_keep": int(min_keep),
                "short_users": int(np.sum(active & (removed < n)))},
        n_rows=len(train), source=train.fingerprint())
    return train.take(keep), record


def seed_only(train: Interactions) -> tuple[Interactions, PerturbationRecord]:
    """No data change: the trial retrains with a different seed (Betello et al. 2023 RQ1 baseline)."""
    return train, PerturbationRecord(kind="seed-only", selector="seed-only",
                                     params={"reseed": True}, n_rows=len(train),
                                     source=train.fingerprint())
