"""Rating modifications (Shriver 2018 §4.1.2): add, remove, change; sets applied atomically.

*Add* inserts a rating ``r`` for a ``(user, item)`` pair the user has not rated, *remove*
deletes an existing rating, *change* replaces the value of an existing rating by ``r``. A
:class:`ModificationSet` holds ``M`` modifications (one row each) on pairwise distinct
``(user, item)`` pairs; :func:`apply_modifications` applies the whole set at once and returns a
:class:`FuzzRecord` from which :meth:`FuzzRecord.apply` rebuilds the modified log exactly.

Rules the thesis leaves open (documented choices):

- A log may hold a pair more than once (repeated ratings). *Remove* deletes every row of the
  pair; *change* sets the value of every row of the pair (timestamps are kept).
- An added rating is stamped with the user's latest timestamp in the log (the log's latest
  timestamp for a user without rows), so it becomes the user's most recent rating and never
  lands after anything the user did later; rows are re-sorted stably, so it follows the user's
  existing rows of equal time.
- Modifications are validated before anything changes: adding a rated pair, removing or
  changing an unrated pair, a repeated pair, a NaN value or codes outside the code space raise
  :class:`ValueError` naming the offending modification.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from recaudit.data import Interactions, pair_keys

__all__ = ["ADD", "REMOVE", "CHANGE", "KINDS", "ModificationSet", "FuzzRecord",
           "apply_modifications", "pair_keys"]

ADD, REMOVE, CHANGE = "add", "remove", "change"
KINDS = (ADD, REMOVE, CHANGE)


@dataclass(frozen=True)
class ModificationSet:
    """``M`` modifications: parallel arrays ``kind`` (str), ``user``, ``item`` (codes) and
    ``value`` (the new rating; ``NaN`` for *remove*). Order is generation order."""

    kind: tuple[str, ...]
    user: np.ndarray
    item: np.ndarray
    value: np.ndarray

    def __post_init__(self) -> None:
        object.__setattr__(self, "kind", tuple(str(k) for k in self.kind))
        for name in ("user", "item"):
            object.__setattr__(self, name, np.asarray(getattr(self, name), dtype=np.int64))
        object.__setattr__(self, "value", np.asarray(self.value, dtype=np.float64))
        n = len(self.kind)
        if not (len(self.user) == len(self.item) == len(self.value) == n):
            raise ValueError(f"modification arrays differ in length: kind {n}, user "
                             f"{len(self.user)}, item {len(self.item)}, value {len(self.value)}")
        bad = [k for k in self.kind if k not in KINDS]
        if bad:
            raise ValueError(f"unknown modification kind {bad[0]!r}; use one of {KINDS}")

    @classmethod
    def empty(cls) -> ModificationSet:
        return cls((), np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0))

    @classmethod
    def of(cls, kind: str, user: Any, item: Any, value: Any = None) -> ModificationSet:
        """All modifications of one ``kind`` (``value`` broadcast; ignored for remove)."""
        user = np.atleast_1d(np.asarray(user, dtype=np.int64))
        vals = np.full(len(user), np.nan) if kind == REMOVE or value is None else \
            np.broadcast_to(np.asarray(value, dtype=np.float64), user.shape).copy()
        return cls((kind,) * len(user), user, np.atleast_1d(item), vals)

    @staticmethod
    def concat(sets: list[ModificationSet]) -> ModificationSet:
        if not sets:
            return ModificationSet.empty()
        return ModificationSet(sum((s.kind for s in sets), ()),
                               np.concatenate([s.user for s in sets]),
                               np.concatenate([s.item for s in sets]),
                               np.concatenate([s.value for s in sets]))

    def take(self, order: np.ndarray) -> ModificationSet:
        order = np.asarray(order, dtype=np.int64)
        return ModificationSet(tuple(self.kind[i] for i in order), self.user[order],
                               self.item[order], self.value[order])

    def __len__(self) -> int:
        return len(self.kind)


@dataclass(frozen=True)
class FuzzRecord:
    """Exactly what a modification set changed; JSON-serialisable via :meth:`to_dict`.

    ``kind``/``user``/``item``/``value`` are the modifications (codes), ``old_value`` the
    rating before (``None`` for add; the latest row's value for repeated pairs), ``rows`` the
    original row indices removed or changed (one list per modification), ``timestamp`` the
    time given to each added rating. ``user_id``/``item_id`` repeat the pairs as original ids.
    ``heuristic`` and ``info`` (influence scores, chosen aspects) say why these were chosen.
    """

    kind: list[str]
    user: list[int]
    item: list[int]
    value: list[float | None]
    old_value: list[float | None]
    rows: list[list[int]]
    timestamp: list[float | int | None]
    user_id: list[Any]
    item_id: list[Any]
    n_rows_before: int
    n_rows_after: int
    fingerprint_before: str
    fingerprint_after: str
    heuristic: str = ""
    info: dict[str, Any] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.kind)

    def modifications(self) -> ModificationSet:
        vals = [np.nan if v is None else v for v in self.value]
        return ModificationSet(tuple(self.kind), np.asarray(self.user, np.int64),
                               np.asarray(self.item, np.int64), np.asarray(vals, np.float64))

    def to_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> FuzzRecord:
        unknown = set(d) - set(cls.__dataclass_fields__)
        if unknown:
            raise ValueError(f"unknown FuzzRecord keys {sorted(unknown)}")
        return cls(**d)

    def apply(self, original: Interactions) -> Interactions:
        """Re-apply the recorded modifications to ``original`` (must be the same log)."""
        if original.fingerprint() != self.fingerprint_before:
            raise ValueError("this record was made on another log (fingerprint "
                             f"{self.fingerprint_before[:12]}…, got "
                             f"{original.fingerprint()[:12]}…); pass the original training log")
        log, _ = _apply(original, self.modifications())
        return log


def _jsonable(x: Any) -> Any:
    return x.item() if isinstance(x, np.generic) else x


def _apply(log: Interactions, mods: ModificationSet) -> tuple[Interactions, dict[str, Any]]:
    n = len(mods)
    if n and (mods.user.min() < 0 or mods.user.max() >= log.n_users
              or mods.item.min() < 0 or mods.item.max() >= log.n_items):
        raise ValueError(f"modification codes outside the log's code space "
                         f"({log.n_users} users, {log.n_items} items)")
    if log.rating is None:
        raise ValueError(f"{log.name}: rating modifications need a log with ratings")
    keys = pair_keys(mods.user, mods.item, log.n_items)
    uniq, counts = np.unique(keys, return_counts=True)
    if n and counts.max() > 1:
        j = int(np.flatnonzero(keys == uniq[counts.argmax()])[0])
        raise ValueError(f"modification {j}: pair (user {mods.user[j]}, item {mods.item[j]}) "
                         "appears more than once in the set; a set modifies distinct pairs")
    kinds = np.asarray(mods.kind, dtype=object)
    nan_value = np.isnan(mods.value) & (kinds != REMOVE)
    if nan_value.any():
        raise ValueError(f"modification {int(np.flatnonzero(nan_value)[0])}: add and change "
                         "need a rating value, got NaN")
    log_keys = pair_keys(log.user, log.item, log.n_items)
    order = np.argsort(log_keys, kind="stable")
    sorted_keys = log_keys[order]
    lo = np.searchsorted(sorted_keys, keys, "left")
    hi = np.searchsorted(sorted_keys, keys, "right")
    rated = hi > lo
    for j in range(n):
        if kinds[j] == ADD and rated[j]:
            raise ValueError(f"modification {j}: cannot add (user {mods.user[j]}, item "
                             f"{mods.item[j]}): the user already rated the item")
        if kinds[j] != ADD and not rated[j]:
            raise ValueError(f"modification {j}: cannot {kinds[j]} (user {mods.user[j]}, item "
                             f"{mods.item[j]}): the user has not rated the item")
    rows = [np.sort(order[lo[j]:hi[j]]) for j in range(n)]
    rating = np.array(log.rating, dtype=np.float32, copy=True)
    keep = np.ones(len(log), dtype=bool)
    old = []
    for j in range(n):
        old.append(None if kinds[j] == ADD else float(rating[rows[j][-1]]))
        if kinds[j] == REMOVE:
            keep[rows[j]] = False
        elif kinds[j] == CHANGE:
            rating[rows[j]] = mods.value[j]
    add = np.flatnonzero(kinds == ADD)
    ts = np.zeros(len(add), dtype=log.timestamp.dtype)
    if len(add):
        last = np.full(log.n_users, log.timestamp.max() if len(log) else 0,
                       dtype=log.timestamp.dtype)
        if len(log):
            # rows are in time order, so the maximum per user is the last assignment
            per_user = np.full(log.n_users, np.iinfo(np.int64).min if log.timestamp.dtype.kind
                               == "i" else -np.inf, dtype=log.timestamp.dtype)
            np.maximum.at(per_user, log.user, log.timestamp)
            has = np.bincount(log.user, minlength=log.n_users) > 0
            last = np.where(has, per_user, last)
        ts = last[mods.user[add]]
    new = log.replace(
        user=np.concatenate([log.user[keep], mods.user[add]]),
        item=np.concatenate([log.item[keep], mods.item[add]]),
        timestamp=np.concatenate([log.timestamp[keep], ts]),
        rating=np.concatenate([rating[keep], mods.value[add].astype(np.float32)]))
    tstamps: list[Any] = [None] * n
    for a, row in enumerate(add):
        tstamps[row] = _jsonable(ts[a])
    facts = {"old_value": old, "rows": [r.astype(int).tolist() for r in rows],
             "timestamp": tstamps}
    return new, facts


def apply_modifications(log: Interactions, mods: ModificationSet, *, heuristic: str = "",
                        info: dict[str, Any] | None = None) -> tuple[Interactions, FuzzRecord]:
    """Apply ``mods`` to ``log`` atomically (validated first); returns ``(new log, record)``.

    The new log keeps ``log``'s code space; see the module docstring for the rules.
    """
    new, facts = _apply(log, mods)
    record = FuzzRecord(
        kind=list(mods.kind), user=mods.user.astype(int).tolist(),
        item=mods.item.astype(int).tolist(),
        value=[None if k == REMOVE else float(v) for k, v in zip(mods.kind, mods.value,
                                                                 strict=True)],
        old_value=facts["old_value"], rows=facts["rows"], timestamp=facts["timestamp"],
        user_id=[_jsonable(x) for x in log.user_ids[mods.user]],
        item_id=[_jsonable(x) for x in log.item_ids[mods.item]],
        n_rows_before=len(log), n_rows_after=len(new),
        fingerprint_before=log.fingerprint(), fingerprint_after=new.fingerprint(),
        heuristic=heuristic, info=dict(info or {}))
    return new, record
