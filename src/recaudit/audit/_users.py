"""The users of an audit store: which data each model was audited on, and what the data says
about each user.

A store names its data by the spec of every trial (dataset, split) and the fingerprint of the
filtered log; :func:`recaudit.audit._data.audit_data` finds that log again (the store's copy,
the file, ``--data``) and checks the fingerprint, so per-user figures are computed on exactly
the data the trials saw. The user codes in ``query_results`` are codes of that log's user ids.

Per-user properties of the training log (:func:`user_feature`):

- ``activity``: the user's training interactions;
- ``popularity``: the mean, over the user's training interactions, of the item's training
  popularity (its number of training interactions);
- ``recency``: the time from the user's last training interaction to the last one of the whole
  training log, in the data's time unit (0: active at the end of the training data).

``column:NAME`` reads a user attribute: from a table of users given by the caller
(:func:`read_users`), or else from the dataset's own file, where it must hold one value per
user (:func:`user_column`).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from recaudit.audit._data import DataPaths, data_file
from recaudit.audit._store import AuditStore
from recaudit.data import Interactions
from recaudit.errors import ConfigError, DataError, did_you_mean
from recaudit.experiment import DatasetSpec, Store

__all__ = ["FEATURES", "Group", "groups", "user_feature", "user_column", "read_users",
           "user_code", "own_id", "own_ids", "quiet", "opened"]

#: The per-user properties of the training log :func:`user_feature` computes.
FEATURES = ("activity", "popularity", "recency")


@dataclass(frozen=True)
class Group:
    """One audited model on one filtered log: ``dataset`` as the trials name it, ``name`` as
    tables show it (``dataset [<fingerprint>]`` when one dataset name was filtered two ways),
    the log's ``fingerprint`` and the ``model`` label."""

    dataset: str
    name: str
    fingerprint: str | None
    model: str


def groups(s: AuditStore) -> list[Group]:
    """Every (dataset, filtered log, model) with finished trials, in a fixed order."""
    if not {"trials", "query_results"} <= s.tables():
        return []
    fp = "data_fingerprint" if "data_fingerprint" in s._present("trials") else "NULL"
    keys = s.sql(f"SELECT DISTINCT dataset, {fp} AS data_fingerprint, model_label "
                 "FROM trials WHERE status = 'done' ORDER BY ALL")
    logs = keys.groupby("dataset").data_fingerprint.nunique(dropna=False)
    out = []
    for dataset, fp_, model in keys.itertuples(index=False):
        fp_ = None if pd.isna(fp_) else str(fp_)
        name = dataset if logs[dataset] == 1 else f"{dataset} [{str(fp_)[:8]}]"
        out.append(Group(dataset, name, fp_, model))
    return out


def user_feature(train: Interactions, kind: str) -> np.ndarray:
    """Per user code of ``train``, the property ``kind`` (:data:`FEATURES`; module docstring);
    NaN for ``popularity`` and ``recency`` of a user without training interactions."""
    counts = np.bincount(train.user, minlength=train.n_users).astype(np.float64)
    if kind == "activity":
        return counts
    if kind == "popularity":
        pop = np.bincount(train.item, minlength=train.n_items).astype(np.float64)[train.item]
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.bincount(train.user, weights=pop, minlength=train.n_users) / counts
    if kind == "recency":
        last = np.full(train.n_users, -np.inf)
        np.maximum.at(last, train.user, train.timestamp.astype(np.float64))
        out = float(train.timestamp.max()) - last if len(train) else last
        out[counts == 0] = np.nan
        return out
    raise ValueError(f"unknown user feature {kind!r}; use one of {FEATURES}")


def own_id(ids: np.ndarray, code: int) -> Any:
    """The data's own id of ``code`` as a plain Python value."""
    v = ids[int(code)]
    return v.item() if isinstance(v, np.generic) else v


def own_ids(ids: np.ndarray, codes: Any) -> list[Any]:
    """The data's own ids of ``codes``, as plain Python values."""
    return np.asarray(ids)[np.asarray(codes, dtype=np.int64)].tolist()


def user_code(data: Interactions, user: Any, label: str) -> int:
    """The code of the user with the data's own id ``user`` (compared as given, then as
    text: ``--user 42`` finds the integer id 42)."""
    ids = data.user_ids
    hits = np.flatnonzero(ids == user) if not isinstance(user, str) or ids.dtype.kind in "OUS" \
        else np.array([], dtype=np.int64)
    if not len(hits):
        text = np.asarray([str(x) for x in ids.tolist()])
        hits = np.flatnonzero(text == str(user))
    if not len(hits):
        raise DataError(f"no user {user!r} in {label}." + did_you_mean(
            str(user), [str(x) for x in ids.tolist()]), hint="give a user id as the data "
                        "writes it (recaudit changes STORE --worst 10 lists some)")
    return int(hits[0])


def read_users(users: pd.DataFrame | str | os.PathLike) -> pd.DataFrame:
    """A table of user attributes: a frame, or a CSV/TSV/Parquet file, with a ``user`` column
    (else its first column is the user id)."""
    if not isinstance(users, pd.DataFrame):
        path = Path(users)
        if not path.exists():
            raise DataError("file not found", source=str(path), hint="check the path")
        if path.suffix.lower() == ".parquet":
            users = pd.read_parquet(path)
        else:
            from recaudit.data import head_lines, sniff_delimiter

            sep = sniff_delimiter(head_lines(path)) or ","
            users = pd.read_csv(path, sep=sep)
    if "user" not in users.columns:
        users = users.rename(columns={users.columns[0]: "user"})
    return users


def _own_file_users(data_spec: DatasetSpec) -> pd.DataFrame | None:
    """The dataset's own file as a table with a ``user`` column, where it has a header."""
    if data_spec.path is None or not Path(data_spec.path).exists():
        return None
    opts = dict(data_spec.options)
    cols = opts.get("columns")
    user_col = cols.get("user", "user") if isinstance(cols, dict) else "user"
    path = Path(data_spec.path)
    if path.suffix.lower() == ".parquet":
        frame = pd.read_parquet(path)
    elif path.suffix.lower() in (".csv", ".tsv", ".txt", ".dat", ".inter") or not path.suffix:
        from recaudit.data import head_lines, sniff_delimiter

        sep = opts.get("sep") or sniff_delimiter(head_lines(path)) or ","
        frame = pd.read_csv(path, sep=r"\s+" if sep == " " else sep)
    else:
        return None
    if user_col not in frame.columns:
        return None
    return frame.rename(columns={user_col: "user"}) if user_col != "user" else frame


def user_column(s: AuditStore, group: Group, train: Interactions, name: str,
                users: pd.DataFrame | str | os.PathLike | None = None,
                data: DataPaths = None) -> np.ndarray:
    """Per user code of ``train``, the attribute ``name``: from ``users`` (:func:`read_users`)
    when given, else from the dataset's own file (where :func:`recaudit.audit._data.data_file`
    finds it: ``data``, the paths the store records; the store's copy of the log holds no
    attributes). Users the table does not list get NaN (or ``None``); a user with two
    different values is an error."""
    if users is not None:
        table, where = read_users(users), "the users table"
        if not isinstance(users, pd.DataFrame):
            where = str(users)
    else:
        spec = data_file(s, group.dataset, group.fingerprint, data)
        table, where = _own_file_users(spec), str(spec.path or spec.name)
        if table is None:
            raise ConfigError(f"slices by column:{name} need a user attribute, and "
                              f"{group.dataset!r} has no file with a header to read it from"
                              + ("" if spec.path is None or Path(spec.path).exists() else
                                 f" ({spec.path} is not there)"),
                              hint="give a table of users with --users FILE (a `user` column "
                                   f"and a `{name}` column), or the audit's file with "
                                   "--data PATH")
    if name not in table.columns:
        raise ConfigError(f"{where} has no column {name!r} (columns: "
                          f"{', '.join(map(str, table.columns))})."
                          + did_you_mean(name, [str(c) for c in table.columns]),
                          hint="name a column that holds one value per user")
    pairs = table[["user", name]].dropna().drop_duplicates()
    keys = pairs["user"].map(str)
    twice = keys[keys.duplicated()]
    if len(twice):
        u = twice.iloc[0]
        values = pairs.loc[keys == u, name].tolist()[:3]
        raise DataError(f"column {name!r} is not a user attribute: user {u} has several "
                        f"values ({', '.join(map(str, values))})", source=where, column=name,
                        hint="slice by a column with one value per user, or give one with "
                             "--users FILE")
    by_id = dict(zip(keys, pairs[name]))
    numeric = pd.api.types.is_numeric_dtype(pairs[name]) and \
        not pd.api.types.is_bool_dtype(pairs[name])
    values = [by_id.get(str(u)) for u in train.user_ids.tolist()]
    if numeric:
        return np.array([np.nan if v is None else float(v) for v in values])
    return np.array(values, dtype=object)


@contextlib.contextmanager
def quiet(s: AuditStore) -> Iterator[None]:
    """DuckDB's progress bar off for the block: DuckDB draws it on stdout, into a command's
    CSV or JSON."""
    row = s.con.execute("SELECT current_setting('enable_progress_bar')").fetchone()
    before = bool(row[0]) if row is not None else False
    s.con.execute("SET enable_progress_bar = false")
    try:
        yield
    finally:
        s.con.execute(f"SET enable_progress_bar = {'true' if before else 'false'}")


@contextlib.contextmanager
def opened(store: Store | str | Path) -> Iterator[AuditStore]:
    """``store`` itself (as an :class:`AuditStore`), or the file at that path opened read-only,
    with DuckDB's progress bar off, for the block."""
    if isinstance(store, Store):
        s = AuditStore.of(store)
        with quiet(s):
            yield s
        return
    with AuditStore(store, read_only=True) as s, quiet(s):
        yield s
