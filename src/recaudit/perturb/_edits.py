"""The three interaction edits of Oh et al. 2022 (sections 5 and 6): delete, insert, replace.

Each takes the log, the selected original rows and returns ``(perturbed log, record)``.

New-item rule (insert and replace), chosen by ``strategy``:

- candidates are the items that occur in the log at least once (an item the model never saw in
  training has no trained embedding, and "least interacted" would otherwise always be a
  never-seen item);
- excluded are the item at the selected row (the "item already there") and the items of the
  user's neighbouring interactions at that position -- for ``replace`` the user's previous and
  next interactions around the row, for ``insert`` the selected row and the user's next
  interaction (the two the new interaction sits between) -- so an edit never is a no-op and never
  creates an immediate repeat of a neighbour;
- ``random``: uniform over the remaining candidates (drawn from ``rng`` in selection order);
  ``popular``: the one with the most interactions in the log; ``unpopular``: the one with the
  fewest; ties go to the lower item code.

Insertion timestamp rule: a new interaction after selected row ``r`` (user ``u``, time ``t``)
gets ``t + (t' - t) / 2`` where ``t'`` is the time of ``u``'s next interaction (floor division
for integer timestamps), or ``t`` when ``r`` is ``u``'s last interaction. It is placed at the
first position after ``r`` that keeps the log sorted by timestamp, so it always lies between
``r`` and ``u``'s next interaction in the stable ``(timestamp, row)`` order, even when the
timestamps are equal. It copies ``r``'s rating when the log has ratings.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from recaudit.data import Interactions
from recaudit.errors import DataError
from recaudit.perturb._record import PerturbationRecord

__all__ = ["STRATEGIES", "delete_rows", "insert_after", "replace_items", "neighbours"]

STRATEGIES = ("random", "popular", "unpopular")


def neighbours(log: Interactions) -> tuple[np.ndarray, np.ndarray]:
    """``(prev_row, next_row)`` of each row within its user's sequence (``-1`` = none)."""
    n = len(log)
    prev = np.full(n, -1, dtype=np.int64)
    nxt = np.full(n, -1, dtype=np.int64)
    _, rows = log.user_sequences()
    if n > 1:
        a, b = rows[:-1], rows[1:]
        same = log.user[a] == log.user[b]
        nxt[a[same]] = b[same]
        prev[b[same]] = a[same]
    return prev, nxt


def _check_rows(log: Interactions, rows: np.ndarray) -> np.ndarray:
    rows = np.asarray(rows, dtype=np.int64).ravel()
    if len(rows) == 0:
        raise ValueError("no rows selected")
    if rows.min() < 0 or rows.max() >= len(log):
        raise ValueError(f"selected rows outside [0, {len(log)})")
    if len(np.unique(rows)) != len(rows):
        raise ValueError("selected rows must be distinct")
    return rows


def _record(log: Interactions, kind: str, selector: str, rows: np.ndarray,
            scores: np.ndarray | None, params: dict[str, Any] | None, **changes: Any
            ) -> PerturbationRecord:
    return PerturbationRecord(
        kind=kind, selector=selector, rows=tuple(rows.tolist()),
        users=tuple(log.user[rows].tolist()),
        scores=() if scores is None else tuple(np.asarray(scores, dtype=float).tolist()),
        params=params or {}, n_rows=len(log), source=log.fingerprint(), **changes)


def _choose_item(counts: np.ndarray, exclude: set[int], strategy: str,
                 rng: np.random.Generator, where: str) -> int:
    pool = counts > 0
    pool[list(exclude)] = False
    candidates = np.flatnonzero(pool)
    if len(candidates) == 0:
        raise DataError(f"no item left to put {where}: every item of the log is excluded",
                        hint="use a log with more distinct items")
    if strategy == "random":
        return int(candidates[rng.integers(len(candidates))])
    c = counts[candidates]
    pick = np.argmax(c) if strategy == "popular" else np.argmin(c)  # first = lowest code
    return int(candidates[pick])


def _check_strategy(strategy: str) -> None:
    if strategy not in STRATEGIES:
        raise ValueError(f"strategy must be one of {STRATEGIES}, got {strategy!r}")


def delete_rows(log: Interactions, rows: np.ndarray, *, selector: str = "given",
                scores: np.ndarray | None = None, params: dict[str, Any] | None = None
                ) -> tuple[Interactions, PerturbationRecord]:
    """Remove the selected rows (leave-one-out for one row)."""
    rows = _check_rows(log, rows)
    keep = np.ones(len(log), dtype=bool)
    keep[rows] = False
    record = _record(log, "delete", selector, rows, scores, params, deleted=tuple(rows.tolist()))
    return log.take(keep), record


def replace_items(log: Interactions, rows: np.ndarray, rng: np.random.Generator, *,
                  strategy: str = "random", selector: str = "given",
                  scores: np.ndarray | None = None, params: dict[str, Any] | None = None
                  ) -> tuple[Interactions, PerturbationRecord]:
    """Replace the item of each selected row by a new item chosen by ``strategy``."""
    _check_strategy(strategy)
    rows = _check_rows(log, rows)
    counts = log.item_counts()
    prev, nxt = neighbours(log)
    item = log.item.copy()
    replaced = []
    for r in rows.tolist():
        exclude = {int(log.item[r])}
        exclude.update(int(log.item[x]) for x in (prev[r], nxt[r]) if x >= 0)
        new = _choose_item(counts, exclude, strategy, rng, f"at row {r}")
        replaced.append((r, int(log.item[r]), new))
        item[r] = new
    params = {"strategy": strategy, **(params or {})}
    record = _record(log, "replace", selector, rows, scores, params, replaced=tuple(replaced))
    return log.replace(item=item), record


def _new_timestamp(ts: np.ndarray, r: int, nxt: int) -> int | float:
    t = ts[r]
    if nxt < 0:
        return t.item()
    if ts.dtype.kind == "f":
        return float(t + (ts[nxt] - t) / 2.0)
    return int(t + (ts[nxt] - t) // 2)


def insert_after(log: Interactions, rows: np.ndarray, rng: np.random.Generator, *,
                 strategy: str = "random", selector: str = "given",
                 scores: np.ndarray | None = None, params: dict[str, Any] | None = None
                 ) -> tuple[Interactions, PerturbationRecord]:
    """Insert one new interaction of the selected row's user right after each selected row."""
    _check_strategy(strategy)
    rows = _check_rows(log, rows)
    counts = log.item_counts()
    _, nxt = neighbours(log)
    ts = log.timestamp
    inserted = []
    for r in rows.tolist():
        exclude = {int(log.item[r])}
        if nxt[r] >= 0:
            exclude.add(int(log.item[nxt[r]]))
        new = _choose_item(counts, exclude, strategy, rng, f"after row {r}")
        t_new = _new_timestamp(ts, r, int(nxt[r]))
        before = max(r + 1, int(np.searchsorted(ts, t_new, side="left")))
        rating = None if log.rating is None else float(log.rating[r])
        inserted.append((before, int(log.user[r]), new, t_new, rating))
    inserted.sort(key=lambda x: (x[0], x[3]))
    params = {"strategy": strategy, **(params or {})}
    record = _record(log, "insert", selector, rows, scores, params, inserted=tuple(inserted))
    return record.apply(log), record
