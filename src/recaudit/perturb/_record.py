"""What a perturbation changed, exactly enough to redo it: :class:`PerturbationRecord`."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

import numpy as np

from recaudit.data import Interactions
from recaudit.errors import DataError

__all__ = ["PerturbationRecord", "KINDS"]

#: Kinds of record: the edit applied (``remove-position`` is a multi-row delete).
KINDS = ("delete", "insert", "replace", "seed-only", "none")


def _num(x: Any) -> int | float:
    """A JSON-friendly Python number (ints stay ints)."""
    if isinstance(x, (bool, np.bool_)):
        raise TypeError("booleans are not numbers here")
    if isinstance(x, (int, np.integer)):
        return int(x)
    return float(x)


@dataclass(frozen=True)
class PerturbationRecord:
    """Exactly what a perturbation changed in a training log.

    Row indices always refer to the *original* log (the one the perturbation was given).

    Attributes
    ----------
    kind:
        ``"delete"``, ``"insert"``, ``"replace"``, ``"seed-only"`` or ``"none"``.
    selector:
        Name of what chose the rows (``"random"``, ``"casper"``, ``"position-end"``, ...).
    rows:
        The selected original rows, in selection order (for ``insert`` the rows the new
        interactions follow; empty for position removal, where ``deleted`` says it all).
    deleted:
        Original rows removed (sorted).
    inserted:
        ``(before_row, user, item, timestamp, rating)`` per new interaction: it is placed
        immediately before original row ``before_row`` (``n`` = at the end), after any earlier
        insertion at the same place; ``rating`` is ``None`` for logs without ratings.
    replaced:
        ``(row, old_item, new_item)`` per replacement.
    users:
        Users whose data changed (sorted, distinct).
    scores:
        The selector's score of each selected row (empty for random selectors).
    params:
        Everything else that determined the result (strategy, count, seed, ``max_len``, ...);
        JSON-serialisable values only.
    n_rows, source:
        Length and :meth:`~recaudit.data.Interactions.fingerprint` of the original log;
        :meth:`apply` refuses a different log.
    """

    kind: str
    selector: str
    rows: tuple[int, ...] = ()
    deleted: tuple[int, ...] = ()
    inserted: tuple[tuple[int, int, int, int | float, float | None], ...] = ()
    replaced: tuple[tuple[int, int, int], ...] = ()
    users: tuple[int, ...] = ()
    scores: tuple[float, ...] = ()
    params: Mapping[str, Any] = field(default_factory=dict)
    n_rows: int = 0
    source: str = ""

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"kind must be one of {KINDS}, got {self.kind!r}")
        set_ = object.__setattr__
        set_(self, "rows", tuple(int(r) for r in self.rows))
        set_(self, "deleted", tuple(sorted(int(r) for r in self.deleted)))
        set_(self, "inserted", tuple(
            (int(b), int(u), int(i), _num(t), None if r is None else float(r))
            for b, u, i, t, r in self.inserted))
        set_(self, "replaced", tuple((int(r), int(o), int(nw)) for r, o, nw in self.replaced))
        set_(self, "users", tuple(sorted({int(u) for u in self.users})))
        set_(self, "scores", tuple(float(s) for s in self.scores))
        params = dict(self.params)
        json.dumps(params)  # fail early (TypeError) on values a results store cannot keep
        set_(self, "params", MappingProxyType(params))
        if len(set(self.deleted)) != len(self.deleted):
            raise ValueError("deleted rows must be distinct")

    # ------------------------------------------------------------------ serialisation
    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-serialisable dict (lists, numbers, strings, ``None``)."""
        return {
            "kind": self.kind, "selector": self.selector, "rows": list(self.rows),
            "deleted": list(self.deleted), "inserted": [list(x) for x in self.inserted],
            "replaced": [list(x) for x in self.replaced], "users": list(self.users),
            "scores": [s if math.isfinite(s) else str(s) for s in self.scores],
            "params": dict(self.params), "n_rows": self.n_rows, "source": self.source,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> PerturbationRecord:
        """Inverse of :meth:`to_dict`; unknown keys are an error."""
        known = {"kind", "selector", "rows", "deleted", "inserted", "replaced", "users", "scores",
                 "params", "n_rows", "source"}
        unknown = set(data) - known
        if unknown:
            raise ValueError(f"unknown PerturbationRecord keys: {sorted(unknown)}")
        d = dict(data)
        d["inserted"] = tuple(tuple(x) for x in d.get("inserted", ()))
        d["replaced"] = tuple(tuple(x) for x in d.get("replaced", ()))
        d["scores"] = tuple(float(s) for s in d.get("scores", ()))
        return cls(**d)

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> PerturbationRecord:
        return cls.from_dict(json.loads(text))

    # ------------------------------------------------------------------ replay
    @property
    def changes_data(self) -> bool:
        return bool(self.deleted or self.inserted or self.replaced)

    def apply(self, original: Interactions) -> Interactions:
        """Redo the perturbation on ``original``: the result equals the perturbed log exactly.

        Replacements and deletions address original rows; each insertion goes immediately
        before its original ``before_row``. Raises :class:`~recaudit.errors.DataError` when
        ``original`` is not the log the record was made from.
        """
        n = len(original)
        if self.source and (n != self.n_rows or original.fingerprint() != self.source):
            raise DataError(f"this record was made from a different log ({self.n_rows} rows, "
                            f"fingerprint {self.source[:12]}...); got {n} rows, fingerprint "
                            f"{original.fingerprint()[:12]}...", source=original.name,
                            hint="apply a record to the exact training log it was made from")
        if not self.changes_data:
            return original
        item = original.item.copy()
        for row, old, new in self.replaced:
            if not 0 <= row < n or item[row] != old:
                raise DataError(f"record replaces item {old} at row {row}, which does not hold "
                                "it", source=original.name)
            item[row] = new
        keep = np.ones(n, dtype=bool)
        if self.deleted:
            rows = np.asarray(self.deleted, dtype=np.int64)
            if rows.min() < 0 or rows.max() >= n:
                raise DataError(f"record deletes rows outside [0, {n})", source=original.name)
            keep[rows] = False
        user, ts, rating = original.user, original.timestamp, original.rating
        if self.inserted:
            ins = self.inserted
            before = np.array([x[0] for x in ins], dtype=np.int64)
            if before.min() < 0 or before.max() > n:
                raise DataError(f"record inserts before rows outside [0, {n}]",
                                source=original.name)
            user = np.insert(user, before, np.array([x[1] for x in ins], dtype=np.int32))
            item = np.insert(item, before, np.array([x[2] for x in ins], dtype=np.int32))
            ts = np.insert(ts, before, np.array([x[3] for x in ins], dtype=ts.dtype))
            if rating is not None:
                vals = [np.nan if x[4] is None else x[4] for x in ins]
                rating = np.insert(rating, before, np.array(vals, dtype=np.float32))
            keep = np.insert(keep, before, True)
        return original.replace(user=user[keep], item=item[keep], timestamp=ts[keep],
                                rating=None if rating is None else rating[keep])
