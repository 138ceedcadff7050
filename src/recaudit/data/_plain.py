"""Readers and writers of plain interaction files: CSV/TSV (delimiter and header sniffed) and
Parquet (exact round trip).

Format-specific readers (RecBole, JODIE, MovieLens, the shared TSVs, Foursquare, Jester) live in
:mod:`recaudit.data._published` and the :func:`read` dispatcher in :mod:`recaudit.data._detect`.
Writers never leave a half-written file (:meth:`Interactions.to_csv`, ``to_parquet``).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from recaudit.data._interactions import PARQUET_KEY, Interactions
from recaudit.data._text import build, head_lines, infer_header, read_raw, sniff_delimiter
from recaudit.data._frames import validate_frame
from recaudit.errors import DataError

__all__ = ["read_csv", "read_parquet", "write_csv", "write_parquet"]


def write_csv(log: Interactions, path: str | os.PathLike, *, sep: str = ",") -> None:
    """:meth:`Interactions.to_csv` as a function."""
    log.to_csv(path, sep=sep)


def write_parquet(log: Interactions, path: str | os.PathLike) -> None:
    """:meth:`Interactions.to_parquet` as a function; :func:`read_parquet` reads it back."""
    log.to_parquet(path)


# ---------------------------------------------------------------------------------- CSV
_POSITIONAL = {2: ["user", "item"], 3: ["user", "item", "timestamp"],
               4: ["user", "item", "rating", "timestamp"]}


def read_csv(
    path: str | os.PathLike,
    *,
    sep: str | None = None,
    header: bool | str = "infer",
    columns: Mapping[str, Any] | Sequence[str] | None = None,
    duplicates: str = "keep",
    require_rating: bool = False,
    encoding: str = "utf-8",
    item_attributes: Mapping[Any, Any] | None = None,
    name: str | None = None,
) -> Interactions:
    """Read a delimited text file (CSV, TSV, …) into :class:`Interactions`.

    Parameters
    ----------
    sep:
        Delimiter; ``None`` sniffs tab, comma, semicolon or whitespace (``" "`` means any run
        of whitespace) from the first 20 lines (see :func:`sniff_delimiter`).
    header:
        ``True``, ``False`` or ``"infer"``: a header is assumed when the first line contains
        a role-like name (``user``, ``item_id``, ``timestamp`` …), the names given in
        ``columns``, or a non-numeric field above a numeric one.
    columns:
        With a header: mapping ``role -> column name``. Without a header: a list of names for
        the columns (roles are the names equal to ``user``, ``item``, ``timestamp``,
        ``rating``; other columns are ignored) or a mapping ``role -> 0-based position``.
        Headerless files without ``columns`` are read positionally: 2 columns ``user item``,
        3 ``user item timestamp``, 4 ``user item rating timestamp`` (the MovieLens order).
    duplicates, require_rating:
        See :func:`recaudit.data.validate_frame`.
    """
    label = str(path)
    if not os.path.exists(path):
        raise DataError("file not found", source=label, hint="check the path")
    lines = head_lines(path, encoding=encoding)
    if not lines:
        raise DataError("file is empty", source=label,
                        hint="the file must hold one interaction per line")
    if sep is None:
        sep = sniff_delimiter(lines)
        if sep is None:
            raise DataError("cannot detect the delimiter (only one column)", source=label,
                            line=1, hint="give the separator: --sep ',' or --sep '\\t' on the "
                                         "command line, options = {sep = \"\\t\"} in a "
                                         "[[datasets]] table, sep='\\t' in Python")
    if header not in (True, False, "infer"):
        raise ValueError(f"header must be True, False or 'infer', got {header!r}")
    has_header = infer_header(lines, sep, columns) if header == "infer" else bool(header)
    names = None
    roles: Mapping[str, Any] | None = None
    if isinstance(columns, Mapping):
        roles = columns
    elif columns is not None:
        names = list(columns)
    df, first_line = read_raw(path, sep=sep, header=has_header, names=names, encoding=encoding)
    if df.shape[1] == 1:
        others = [s for s in (",", "\t", ";", "|", "::") if s != sep and s in lines[0]]
        raise DataError(f"only one column found with sep={sep!r}", source=label, line=1,
                        hint=(f"looks like the delimiter is {others[0]!r}: --sep {others[0]!r} "
                              f"on the command line, options = {{sep = {others[0]!r}}} in a "
                              f"[[datasets]] table, sep={others[0]!r} in Python"
                              if others else "give the right separator (--sep, or sep= in "
                                             "options / Python)"))
    if not has_header and names is None:
        if roles is not None and all(isinstance(v, (int, np.integer)) for v in roles.values()):
            pass  # positions are the integer column labels pandas assigns
        elif roles is not None:
            asked = ", ".join(f"{r}={v}" for r, v in roles.items())
            raise DataError(f"columns are named ({asked}) but the first line, {lines[0][:60]!r}, "
                            "is data, not a header naming them", source=label, line=1,
                            hint="add a header line naming the columns, or name none: without "
                                 "a header 2 columns are read as user item, 3 as user item "
                                 "timestamp, 4 as user item rating timestamp (Python: "
                                 "columns=[names...] or {role: position})")
        elif df.shape[1] in _POSITIONAL:
            df.columns = _POSITIONAL[df.shape[1]]
        else:
            raise DataError(f"headerless file with {df.shape[1]} columns", source=label, line=1,
                            hint="pass columns=[...] naming each column (use 'user', 'item', "
                                 "'timestamp', 'rating' for the roles)")
    return build(df, roles, source=label, first_line=first_line, duplicates=duplicates,
                 require_rating=require_rating, item_attributes=item_attributes, name=name)


# ---------------------------------------------------------------------------------- Parquet
def read_parquet(
    path: str | os.PathLike,
    *,
    columns: Mapping[str, Any] | None = None,
    duplicates: str = "keep",
    require_rating: bool = False,
    name: str | None = None,
) -> Interactions:
    """Read a Parquet file; files written by :func:`write_parquet` round-trip exactly.

    Errors name the 0-based row (Parquet has no lines).
    """
    import pyarrow.parquet as pq

    label = str(path)
    if not os.path.exists(path):
        raise DataError("file not found", source=label, hint="check the path")
    try:
        table = pq.read_table(path)
    except Exception as exc:  # pyarrow raises several types for corrupt files
        raise DataError(f"cannot read as Parquet: {exc}", source=label,
                        hint="check that the file is a Parquet file") from None
    raw = (table.schema.metadata or {}).get(PARQUET_KEY)
    meta = json.loads(raw) if raw else {}
    frame = validate_frame(table.to_pandas(), columns, duplicates=duplicates,
                           require_rating=require_rating, source=label)
    name = name or meta.get("name") or Path(label).stem
    user_ids, item_ids = meta.get("user_ids"), meta.get("item_ids")
    attrs_raw = meta.get("item_attributes")
    if user_ids is not None and item_ids is not None:
        uid, iid = pd.Index(user_ids), pd.Index(item_ids)
        ucode, icode = uid.get_indexer(frame["user"]), iid.get_indexer(frame["item"])
        if (ucode >= 0).all() and (icode >= 0).all():
            attrs = None
            if attrs_raw is not None:
                pos = iid.get_indexer([a[0] for a in attrs_raw])
                attrs = {int(p): frozenset(a[1]) for p, a in zip(pos, attrs_raw) if p >= 0}
            rating = frame["rating"].to_numpy() if "rating" in frame else None
            return Interactions(ucode, icode, frame["timestamp"].to_numpy(), rating,
                                np.asarray(user_ids), np.asarray(item_ids), attrs, name)
    attrs = {a[0]: a[1] for a in attrs_raw} if attrs_raw is not None else None
    return Interactions.from_df(frame, item_attributes=attrs, name=name, source=label)
