"""The immutable columnar interaction log every part of recaudit works on."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

import numpy as np
import pandas as pd

from recaudit._files import atomic_write
from recaudit.errors import DataError

__all__ = ["pair_keys", "Interactions", "DEFAULT_COLUMNS", "PARQUET_KEY"]

#: Key of the recaudit metadata in a Parquet file's schema.
PARQUET_KEY = b"recaudit"

#: Canonical column names and the role each plays.
DEFAULT_COLUMNS: Mapping[str, str] = MappingProxyType(
    {"user": "user", "item": "item", "timestamp": "timestamp", "rating": "rating"}
)


def pair_keys(user: Any, item: Any, n_items: int) -> np.ndarray:
    """``user * n_items + item`` as int64: one key per ``(user, item)`` pair."""
    return np.asarray(user, dtype=np.int64) * np.int64(n_items) + np.asarray(item, dtype=np.int64)


def _frozen(a: np.ndarray) -> np.ndarray:
    """A read-only array with ``a``'s content; never flips the flag of a caller's array."""
    if a.flags.writeable or not a.flags.c_contiguous:
        a = np.array(a, copy=True, order="C")
        a.flags.writeable = False
    return a


@dataclass(frozen=True, eq=False, repr=False)
class Interactions:
    """An immutable interaction log in stable temporal order.

    Rows are always sorted by ``(timestamp, original row order)`` (a stable sort is applied on
    construction), so "the user's sequence" and "the next interaction" are well defined.

    Attributes
    ----------
    user, item:
        ``int32`` dense codes, ``0 <= user < n_users`` and ``0 <= item < n_items``.
    timestamp:
        ``int64`` or ``float64``; never NaN.
    rating:
        ``float32`` or ``None``.
    user_ids, item_ids:
        Original identifiers; ``user_ids[code]`` is the id of user ``code``. The code space is
        fixed by these maps, so a perturbed copy of a log (fewer rows) keeps the same codes and
        the same catalogue: rank lists of the original and the perturbed model are comparable.
    item_attributes:
        Optional mapping ``item code -> frozenset of labels`` (e.g. genres).
    name:
        A label used in reports and error messages.

    Build one with :meth:`from_df` (original ids) or :meth:`from_codes` (codes already dense).
    All arrays are read-only; "modifying" methods return new objects.
    """

    user: np.ndarray
    item: np.ndarray
    timestamp: np.ndarray
    rating: np.ndarray | None
    user_ids: np.ndarray
    item_ids: np.ndarray
    item_attributes: Mapping[int, frozenset[str]] | None = None
    name: str = "interactions"
    _fingerprint: list = field(default_factory=list, compare=False)

    # ------------------------------------------------------------------ construction
    def __post_init__(self) -> None:
        user = np.asarray(self.user)
        item = np.asarray(self.item)
        ts = np.asarray(self.timestamp)
        n = len(user)
        if len(item) != n or len(ts) != n or (self.rating is not None and len(self.rating) != n):
            raise DataError(
                f"columns have different lengths (user {len(user)}, item {len(item)}, "
                f"timestamp {len(ts)})",
                source=self.name,
            )
        if n and (user.min() < 0 or user.max() >= len(self.user_ids)):
            raise DataError("user codes outside [0, n_users)", source=self.name)
        if n and (item.min() < 0 or item.max() >= len(self.item_ids)):
            raise DataError("item codes outside [0, n_items)", source=self.name)
        if ts.dtype.kind not in "iuf":
            raise DataError(f"timestamp must be numeric, got dtype {ts.dtype}", source=self.name)
        ts = ts.astype(np.float64 if ts.dtype.kind == "f" else np.int64, copy=False)
        if ts.dtype.kind == "f" and n and np.isnan(ts).any():
            raise DataError("timestamp contains NaN", source=self.name, column="timestamp")
        order = None
        if n > 1 and np.any(ts[1:] < ts[:-1]):
            order = np.argsort(ts, kind="stable")
        cols = {"user": user.astype(np.int32, copy=False), "item": item.astype(np.int32, copy=False),
                "timestamp": ts}
        if self.rating is not None:
            cols["rating"] = np.asarray(self.rating).astype(np.float32, copy=False)
        for key, arr in cols.items():
            if order is not None:
                arr = arr[order]
            object.__setattr__(self, key, _frozen(arr))
        object.__setattr__(self, "user_ids", _frozen(np.asarray(self.user_ids)))
        object.__setattr__(self, "item_ids", _frozen(np.asarray(self.item_ids)))
        if self.item_attributes is not None:
            attrs = {int(k): frozenset(v) for k, v in self.item_attributes.items()}
            object.__setattr__(self, "item_attributes", MappingProxyType(attrs))

    @classmethod
    def from_codes(
        cls,
        user: Sequence[int] | np.ndarray,
        item: Sequence[int] | np.ndarray,
        timestamp: Sequence[float] | np.ndarray | None = None,
        rating: Sequence[float] | np.ndarray | None = None,
        *,
        n_users: int | None = None,
        n_items: int | None = None,
        user_ids: np.ndarray | None = None,
        item_ids: np.ndarray | None = None,
        item_attributes: Mapping[int, Any] | None = None,
        name: str = "interactions",
    ) -> Interactions:
        """Build from dense integer codes (ids default to the codes themselves).

        ``timestamp`` defaults to the row order ``0..n-1``.
        """
        user = np.asarray(user, dtype=np.int64)
        item = np.asarray(item, dtype=np.int64)
        ts = np.arange(len(user), dtype=np.int64) if timestamp is None else np.asarray(timestamp)
        if user_ids is None:
            nu = n_users if n_users is not None else (int(user.max()) + 1 if len(user) else 0)
            user_ids = np.arange(nu, dtype=np.int64)
        if item_ids is None:
            ni = n_items if n_items is not None else (int(item.max()) + 1 if len(item) else 0)
            item_ids = np.arange(ni, dtype=np.int64)
        return cls(user, item, ts, None if rating is None else np.asarray(rating), user_ids,
                   item_ids, item_attributes, name)

    @classmethod
    def from_df(
        cls,
        df: pd.DataFrame,
        columns: Mapping[str, str] | None = None,
        *,
        item_attributes: Mapping[Any, Any] | None = None,
        duplicates: str = "keep",
        require_rating: bool = False,
        name: str | None = None,
        source: str | None = None,
    ) -> Interactions:
        """Build from a DataFrame of original ids.

        ``columns`` maps roles (``user``, ``item``, ``timestamp``, ``rating``) to column names
        in ``df``; missing roles use the defaults. ``timestamp`` is optional (row order is used
        when the column is absent and was not asked for); ``rating`` is optional unless
        ``require_rating``. ``item_attributes`` maps *original* item ids to label collections.
        ``duplicates`` is ``"error"``, ``"keep"`` or ``"drop"`` for repeated
        ``(user, item, timestamp)`` rows. See :func:`recaudit.data.validate_frame` for the
        checks applied.
        """
        from recaudit.data._frames import validate_frame

        frame = validate_frame(df, columns, duplicates=duplicates, require_rating=require_rating,
                               source=source or name or "DataFrame")
        user_codes, user_ids = pd.factorize(frame["user"], sort=True)
        item_codes, item_ids = pd.factorize(frame["item"], sort=True)
        attrs = None
        if item_attributes is not None:
            index = {iid: code for code, iid in enumerate(item_ids.tolist())}
            attrs = {index[i]: frozenset(v) for i, v in item_attributes.items() if i in index}
        rating = frame["rating"].to_numpy() if "rating" in frame else None
        return cls(user_codes, item_codes, frame["timestamp"].to_numpy(), rating,
                   np.asarray(user_ids), np.asarray(item_ids), attrs,
                   name or source or "interactions")

    # ------------------------------------------------------------------ basic properties
    def __len__(self) -> int:
        return len(self.user)

    @property
    def n_users(self) -> int:
        return len(self.user_ids)

    @property
    def n_items(self) -> int:
        return len(self.item_ids)

    @property
    def has_rating(self) -> bool:
        return self.rating is not None

    def __repr__(self) -> str:
        return (f"Interactions(name={self.name!r}, rows={len(self)}, users={self.n_users}, "
                f"items={self.n_items}, rating={self.has_rating})")

    def fingerprint(self) -> str:
        """SHA-256 of the content (codes, timestamps, ratings, id maps); cached."""
        if not self._fingerprint:
            h = hashlib.sha256()
            for arr in (self.user, self.item, self.timestamp, self.rating):
                if arr is not None:
                    h.update(arr.dtype.str.encode())
                    h.update(arr.tobytes())
            for ids in (self.user_ids, self.item_ids):
                h.update(repr(ids.tolist()).encode())
            self._fingerprint.append(h.hexdigest())
        return self._fingerprint[0]

    # ------------------------------------------------------------------ derived views
    def take(self, rows: np.ndarray) -> Interactions:
        """A new log with the given rows (indices or boolean mask); same code space."""
        rows = np.asarray(rows)
        if rows.dtype == bool:
            rows = np.flatnonzero(rows)
        rows = np.sort(rows)  # keep temporal order
        return self.replace(user=self.user[rows], item=self.item[rows],
                            timestamp=self.timestamp[rows],
                            rating=None if self.rating is None else self.rating[rows])

    def replace(self, **changes: Any) -> Interactions:
        """Copy with some fields replaced (validated and re-sorted like a new log)."""
        fields: dict[str, Any] = dict(
            user=self.user, item=self.item, timestamp=self.timestamp, rating=self.rating,
            user_ids=self.user_ids, item_ids=self.item_ids,
            item_attributes=self.item_attributes, name=self.name)
        fields.update(changes)
        return Interactions(**fields)

    def user_sequences(self) -> tuple[np.ndarray, np.ndarray]:
        """Rows grouped by user, each group in temporal order.

        Returns ``(indptr, rows)``: the rows of user ``u`` are ``rows[indptr[u]:indptr[u+1]]``
        (CSR layout, users with no rows have an empty slice).
        """
        rows = np.argsort(self.user, kind="stable").astype(np.int64)
        counts = np.bincount(self.user, minlength=self.n_users)
        indptr = np.zeros(self.n_users + 1, dtype=np.int64)
        np.cumsum(counts, out=indptr[1:])
        return indptr, rows

    def user_counts(self) -> np.ndarray:
        return np.bincount(self.user, minlength=self.n_users)

    def item_counts(self) -> np.ndarray:
        return np.bincount(self.item, minlength=self.n_items)

    # ------------------------------------------------------------------ converters
    def to_df(self, *, codes: bool = False) -> pd.DataFrame:
        """DataFrame with columns user, item, timestamp[, rating] (original ids by default)."""
        data: dict[str, Any] = {
            "user": self.user if codes else self.user_ids[self.user],
            "item": self.item if codes else self.item_ids[self.item],
            "timestamp": self.timestamp,
        }
        if self.rating is not None:
            data["rating"] = self.rating
        return pd.DataFrame(data)

    def to_csv(self, path: str | os.PathLike, *, sep: str = ",") -> None:
        """Write ``user, item, timestamp[, rating]`` with original ids and a header, atomically
        (:func:`recaudit._files.atomic_write`). Item attributes and ids without interactions
        are not kept (use Parquet for a full round trip)."""
        df = self.to_df()
        atomic_write(path, lambda tmp: df.to_csv(tmp, sep=sep, index=False))

    def to_parquet(self, path: str | os.PathLike, *, compression: str = "snappy") -> None:
        """Write the log as Parquet (original ids), atomically; ``compression``: Parquet's
        codec (``snappy``, ``zstd``: a third smaller, what an audit store keeps).

        The file's schema metadata (key :data:`PARQUET_KEY`) holds JSON with the log's name,
        the full ``user_ids``/``item_ids`` (so ids without interactions and the code order
        survive) and the item attributes as ``[item id, [labels]]`` pairs;
        :func:`~recaudit.data.read_parquet` restores them.
        """
        import json

        import pyarrow as pa
        import pyarrow.parquet as pq

        table = pa.Table.from_pandas(self.to_df(), preserve_index=False)
        meta: dict[str, Any] = {"format": 1, "name": self.name,
                                "user_ids": _jsonable(self.user_ids),
                                "item_ids": _jsonable(self.item_ids)}
        if self.item_attributes is not None:
            ids = self.item_ids
            meta["item_attributes"] = [[ids[code].item() if isinstance(ids[code], np.generic)
                                        else ids[code], sorted(labels)]
                                       for code, labels in sorted(self.item_attributes.items())]
        schema_meta = dict(table.schema.metadata or {})
        schema_meta[PARQUET_KEY] = json.dumps(meta).encode()
        table = table.replace_schema_metadata(schema_meta)
        atomic_write(path, lambda tmp: pq.write_table(table, tmp, compression=compression))


def _jsonable(ids: np.ndarray) -> list | None:
    values = ids.tolist()
    if all(isinstance(v, (int, str)) for v in values):
        return values
    return None
