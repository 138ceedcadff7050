"""Validation of raw interaction tables: every problem is a :class:`DataError` that says where.

:func:`validate_frame` turns a user's DataFrame (or one a reader parsed from a file) into the
canonical frame ``user, item, timestamp[, rating]`` that :meth:`Interactions.from_df` encodes.

Line numbers
    Readers pass ``first_line`` (the 1-based line of the file that holds the frame's first row,
    counting the header: ``2`` for a file with one header line, ``1`` without). Errors then name
    the file line. For a plain DataFrame (``first_line=None``) errors name the 0-based row
    position instead.

Timestamps
    Numeric values are used as they are (``int64`` or ``float64``). ISO 8601 strings
    (``"2012-04-03T18:00:09Z"``, ``"2012-04-03 18:00:09+09:00"``, ``"2012-04-03"``) and
    ``datetime64`` columns are converted to **seconds since the Unix epoch, UTC**; times without
    a zone are taken as UTC. The result is ``int64`` when every value is a whole second and
    ``float64`` (fractional seconds) otherwise. Any other string is an error naming its line.
"""

from __future__ import annotations

import logging
import warnings

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from recaudit.data._columns import ROLES, resolve_roles, roles_hint
from recaudit.errors import DataError, RecauditWarning, closest

log = logging.getLogger(__name__)

__all__ = ["ROLES", "DUPLICATE_POLICIES", "validate_frame"]

#: Accepted values of the ``duplicates`` argument.
DUPLICATE_POLICIES: tuple[str, ...] = ("error", "keep", "drop")


class _Where:
    """Turns a row position into DataError location fields."""

    def __init__(self, source: str, first_line: int | None) -> None:
        self.source = source
        self.first_line = first_line

    def error(self, message: str, pos: int | None = None, *, column: str | None = None,
              hint: str | None = None) -> DataError:
        line = None
        if pos is not None:
            if self.first_line is None:
                message = f"row {pos}: {message}"
            else:
                line = self.first_line + int(pos)
        return DataError(message, source=self.source, line=line, column=column, hint=hint)


def _check_policy(duplicates: str) -> None:
    if duplicates not in DUPLICATE_POLICIES:
        raise ValueError(f"duplicates must be one of {DUPLICATE_POLICIES}, got {duplicates!r}")


def _resolve_columns(df: pd.DataFrame, columns: Mapping[str, Any] | None, require_rating: bool,
                     where: _Where) -> dict[str, Any]:
    """Map each role to an existing column of ``df`` (absent optional roles are omitted); one
    error lists the columns and every mapping still missing (:func:`resolve_roles`)."""
    unknown = [r for r in (columns or {}) if r not in ROLES]
    if unknown:
        guess = closest(str(unknown[0]), ROLES)
        raise ValueError(f"unknown role {unknown[0]!r} in columns; roles are {', '.join(ROLES)}"
                         + (f" (did you mean {guess!r}?)" if guess else ""))
    names = [str(c) for c in df.columns]
    out, problems = resolve_roles(list(df.columns), columns, require_rating)
    if not problems:
        used = list(out.values())
        if len(set(used)) != len(used):
            raise ValueError(f"one column is mapped to several roles: {out}")
        return out
    first = problems[0]
    column = str(first.role if first.given is None else first.given) \
        if len(problems) == 1 else None
    if len(names) == 1 and (sep := _guess_delimiter(names[0])) is not None:
        raise where.error(
            f"only one column ({names[0]!r}) was found, so no column can hold the "
            f"{first.role}", column=column,
            hint=f"looks like the delimiter is {sep!r}: --sep {sep!r} on the command "
                 f"line, options = {{sep = {sep!r}}} in a [[datasets]] table, or "
                 f"sep={sep!r} in Python")
    raise where.error("; ".join(p.text() for p in problems)
                      + f" (columns: {', '.join(names)})", column=column,
                      hint=roles_hint(out, problems, columns))


def _guess_delimiter(text: str) -> str | None:
    """The first of ``, \\t ; |`` (or ``::``) that occurs in ``text``."""
    for sep in ("::", ",", "\t", ";", "|"):
        if sep in text:
            return sep
    return None


def _first(mask: np.ndarray) -> int | None:
    idx = np.flatnonzero(mask)
    return int(idx[0]) if len(idx) else None


def _check_ids(s: pd.Series, role: str, where: _Where) -> pd.Series:
    bad = _first(s.isna().to_numpy())
    if bad is not None:
        raise where.error(f"missing {role} id", bad, column=str(s.name),
                          hint="every interaction needs a user and an item; remove the row")
    return s.reset_index(drop=True)


def _datetime_seconds(values: pd.Series | pd.DatetimeIndex) -> np.ndarray:
    ns = pd.DatetimeIndex(values).as_unit("ns").asi8
    if np.all(ns % 1_000_000_000 == 0):
        return ns // 1_000_000_000
    return ns.astype(np.float64) / 1e9


def to_timestamps(s: pd.Series, where: _Where) -> np.ndarray:
    """Numeric timestamps from ``s`` following the module's documented rule."""
    col = str(s.name)
    hint_missing = "every interaction needs a finite numeric timestamp (or an ISO 8601 string)"
    if pd.api.types.is_bool_dtype(s):
        raise where.error("timestamp column is boolean", column=col, hint=hint_missing)
    if pd.api.types.is_datetime64_any_dtype(s):
        bad = _first(s.isna().to_numpy())
        if bad is not None:
            raise where.error("missing timestamp (NaT)", bad, column=col, hint=hint_missing)
        if getattr(s.dt, "tz", None) is not None:
            s = s.dt.tz_convert("UTC")
        return _datetime_seconds(s)
    if pd.api.types.is_numeric_dtype(s):
        missing = _first(s.isna().to_numpy())
        if missing is not None:
            raise where.error("timestamp is missing (NaN)", missing, column=col, hint=hint_missing)
        if s.dtype.kind == "f":
            arr = s.to_numpy(dtype=np.float64)
            bad = _first(~np.isfinite(arr))
            if bad is not None:
                raise where.error(f"timestamp is not finite ({arr[bad]})", bad, column=col,
                                  hint=hint_missing)
            return arr
        return s.to_numpy(dtype=np.int64)
    # strings / objects: numbers first, then ISO 8601 datetimes
    num = pd.to_numeric(s, errors="coerce")
    num_bad = num.isna().to_numpy()
    if not num_bad.any():
        return to_timestamps(num.rename(s.name), where)
    missing = _first((s.isna() | (s.astype(str).str.strip() == "")).to_numpy())
    if missing is not None:
        raise where.error("missing timestamp", missing, column=col, hint=hint_missing)
    dt = pd.to_datetime(s, utc=True, format="ISO8601", errors="coerce")
    dt_bad = dt.isna().to_numpy()
    if not dt_bad.any():
        return _datetime_seconds(dt)
    # the first row decides what the column is meant to hold; report the first row that isn't
    pos = _first(num_bad) if not num_bad[0] else _first(dt_bad)
    raise where.error(f"timestamp {str(s.iloc[pos])!r} is neither a number nor an ISO 8601 "
                      "datetime", pos, column=col,
                      hint="use numbers (e.g. Unix seconds) or ISO 8601 strings such as "
                           "'2012-04-03T18:00:09Z' in the whole column")


def _check_ratings(s: pd.Series, require_rating: bool, where: _Where) -> np.ndarray:
    col = str(s.name)
    num = pd.to_numeric(s, errors="coerce") if not pd.api.types.is_numeric_dtype(s) else s
    arr = num.to_numpy(dtype=np.float64, na_value=np.nan)
    bad = _first(~np.isfinite(arr))
    if bad is not None:
        raw = s.iloc[bad]
        what = "missing (NaN)" if pd.isna(raw) else f"not a finite number: {raw!r}"
        raise where.error(f"rating is {what}", bad, column=col,
                          hint="fill or remove the row, or drop the rating column")
    if require_rating:
        neg = _first(arr < 0)
        if neg is not None:
            raise where.error(f"rating {arr[neg]:g} is negative", neg, column=col,
                              hint="ratings must be >= 0 here; shift the scale or pass "
                                   "require_rating=False")
    return arr.astype(np.float32)


def _handle_duplicates(out: pd.DataFrame, duplicates: str, where: _Where) -> pd.DataFrame:
    if duplicates == "keep":
        return out
    key = ["user", "item", "timestamp"]
    dup = out.duplicated(key, keep="first").to_numpy()
    if not dup.any():
        return out
    if duplicates == "drop":
        log.info("%s: dropped %d duplicate (user, item, timestamp) rows", where.source,
                 int(dup.sum()))
        return out.loc[~dup].reset_index(drop=True)
    pos = _first(dup)
    row = {k: (v.item() if isinstance(v, np.generic) else v) for k, v in out.iloc[pos].items()}
    same = np.flatnonzero((out["user"] == row["user"]).to_numpy()
                          & (out["item"] == row["item"]).to_numpy()
                          & (out["timestamp"] == row["timestamp"]).to_numpy())
    first = int(same[0])
    first_txt = (f"row {first}" if where.first_line is None
                 else f"line {where.first_line + first}")
    raise where.error(f"duplicate (user, item, timestamp) = ({row['user']!r}, {row['item']!r}, "
                      f"{row['timestamp']!r}); first seen at {first_txt}", pos,
                      hint="pass duplicates='drop' to keep the first occurrence or "
                           "duplicates='keep' to keep all")


def validate_frame(
    df: pd.DataFrame,
    columns: Mapping[str, Any] | None = None,
    *,
    duplicates: str = "keep",
    require_rating: bool = False,
    source: str | None = None,
    first_line: int | None = None,
) -> pd.DataFrame:
    """Check a raw table and return the canonical frame ``user, item, timestamp[, rating]``.

    Parameters
    ----------
    df:
        The raw table.
    columns:
        ``role -> column name`` for roles whose column is not named after the role (roles:
        ``user``, ``item``, ``timestamp``, ``rating``).
    duplicates:
        Repeated ``(user, item, timestamp)`` rows: ``"error"`` (raise, naming the first repeat),
        ``"keep"`` or ``"drop"`` (keep the first occurrence).
    require_rating:
        Ratings must be present, finite and ``>= 0``. Without it a present rating column must
        still be finite (negative values are allowed, e.g. Jester's -10..10 scale).
    source, first_line:
        Where the data came from, for error messages (see the module docstring).

    Returns a new frame with a fresh ``RangeIndex`` in the original row order. When the
    timestamp column is absent and was not asked for in ``columns``, it is synthesised from the
    row order (``0..n-1``, ``int64``). Raises :class:`DataError` on any problem: missing or
    misnamed columns (with the closest existing name), empty data, missing ids, bad timestamps,
    bad ratings, duplicates under ``duplicates="error"``.
    """
    if not isinstance(df, pd.DataFrame):
        raise TypeError(f"expected a pandas DataFrame, got {type(df).__name__}")
    _check_policy(duplicates)
    where = _Where(source or "DataFrame", first_line)
    if len(df.columns) == 0 or len(df) == 0:
        raise where.error("no interactions (the table is empty)",
                          hint="check the file path and that the file has data rows")
    roles = _resolve_columns(df, columns, require_rating, where)
    out = pd.DataFrame({
        "user": _check_ids(df[roles["user"]], "user", where),
        "item": _check_ids(df[roles["item"]], "item", where),
    })
    if "timestamp" in roles:
        out["timestamp"] = to_timestamps(df[roles["timestamp"]].reset_index(drop=True), where)
    else:
        out["timestamp"] = np.arange(len(df), dtype=np.int64)
        unused = [str(c) for c in df.columns if c not in roles.values()]
        if unused:  # perhaps a time column under a name of its own: say what was assumed
            warnings.warn(f"{where.source}: no timestamp column found, so the row order is "
                          f"taken as time; unused columns: {', '.join(unused[:6])}. If one "
                          "of them is the time, name it: --column timestamp=NAME (TOML: "
                          "options = {columns = {timestamp = \"NAME\"}})",
                          RecauditWarning, stacklevel=3)
    if "rating" in roles:
        out["rating"] = _check_ratings(df[roles["rating"]].reset_index(drop=True),
                                       require_rating, where)
    return _handle_duplicates(out, duplicates, where)
