"""The results store: one DuckDB file holding the tables of :mod:`._schema`.

Writes go through Arrow tables typed by the declared schema (never through pandas dtype
inference, which older DuckDB versions do not understand for pandas 3's string dtype); each
call of :meth:`Store.insert` (or a :meth:`Store.transaction` block) is one transaction, so a
process killed at any moment (even SIGKILL) leaves either all of it or nothing. DuckDB allows
one writing process per file: a second one gets :class:`StoreBusyError`. The questions the
analyses and the report ask are methods (:class:`~recaudit.experiment._questions.Questions`);
no SQL lives outside this package.
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeAlias

import numpy as np
import pandas as pd

from recaudit.errors import RecauditError
from recaudit.experiment._questions import Questions
from recaudit.experiment._schema import META, PERTURBATIONS, QUERY_RESULTS, TABLES, TRIALS, Table

__all__ = ["Store", "StoreBusyError"]

log = logging.getLogger(__name__)

Rows: TypeAlias = pd.DataFrame | Mapping[str, Any] | Sequence[Mapping[str, Any]]


class StoreBusyError(RecauditError):
    """Another process holds the store open for writing."""


def _is_null(v: Any) -> bool:
    return v is None or v is pd.NA or (isinstance(v, float) and math.isnan(v))


def _python(v: Any, typ: str) -> Any:
    if _is_null(v):
        return None
    if typ == "BIGINT":
        return int(v)
    if typ == "DOUBLE":
        return float(v)
    if typ == "BOOLEAN":
        return bool(v)
    if typ == "JSON" and not isinstance(v, str):
        return json.dumps(v)
    return str(v)


def _array(values: Any, typ: str) -> Any:
    """``values`` as an Arrow array of the column type (NaN and None are NULL)."""
    import pyarrow as pa

    patype = {"VARCHAR": pa.string(), "JSON": pa.string(), "BIGINT": pa.int64(),
              "DOUBLE": pa.float64(), "BOOLEAN": pa.bool_()}[typ]
    if isinstance(values, pd.Series):
        kind = values.dtype.kind
        if kind == "f" or (kind in "iub" and not values.isna().any()):
            values = values.to_numpy(dtype={"f": np.float64, "b": np.bool_}.get(kind, np.int64))
        else:
            values = values.tolist()
    if isinstance(values, np.ndarray) and values.dtype.kind in "biuf" and typ != "VARCHAR":
        return pa.array(values, type=patype, from_pandas=True)
    return pa.array([_python(v, typ) for v in values], type=patype)


def _columns(rows: Rows) -> dict[str, Any]:
    if isinstance(rows, pd.DataFrame):
        return {str(c): rows[c] for c in rows.columns}
    if isinstance(rows, Mapping):
        return dict(rows)
    rows = list(rows)
    names = list(dict.fromkeys(k for r in rows for k in r))
    return {n: [r.get(n) for r in rows] for n in names}


class Store(Questions):
    """A results store (use as a context manager). ``read_only`` opens an existing file."""

    def __init__(self, path: str | Path, *, read_only: bool = False) -> None:
        import duckdb

        self.path = Path(path)
        self.read_only = read_only
        if read_only and not self.path.exists():
            raise RecauditError(f"no audit store at {self.path}; run an audit first "
                                "(recaudit run CONFIG or recaudit audit ...)")
        if not read_only:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self.con = duckdb.connect(str(self.path), read_only=read_only)
        except duckdb.IOException as exc:
            if "lock" in str(exc).lower():
                raise StoreBusyError(
                    f"the audit store {self.path} is in use by another process; wait for it to "
                    "finish or write to another --output file") from None
            raise RecauditError(f"cannot open audit store {self.path}: {exc}") from None
        except duckdb.Error as exc:
            raise RecauditError(f"{self.path} is not a results store DuckDB can open: {exc}",
                                ) from None
        self._depth = 0
        if not read_only:
            self._create()

    def _create(self) -> None:
        present = self.tables()
        for table in TABLES.values():
            if table.name in present:
                have = set(self.con.execute(f"DESCRIBE {table.name}").df()["column_name"])
                for c in table.columns:  # columns added since, with their default
                    if c.name not in have and c.default is not None:
                        self.con.execute(f'ALTER TABLE {table.name} ADD COLUMN "{c.name}" '
                                         f"{c.type} DEFAULT {c.default}")
                        have.add(c.name)
                missing = [c for c in table.names if c not in have]
                if missing:
                    self.close()
                    raise RecauditError(
                        f"{self.path} was written by an older recaudit: table {table.name!r} "
                        f"lacks the columns {', '.join(missing)}. Write to a new store file "
                        "(--output / output = ...) or re-run the study into one")
            else:
                self.con.execute(table.ddl())

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.con.close()

    # ------------------------------------------------------------------ structure
    def tables(self) -> set[str]:
        """Names of the tables in the file."""
        return {r[0] for r in self.con.execute("SHOW TABLES").fetchall()}

    def count(self, table: str) -> int:
        """Rows of ``table`` (0 when the file lacks it)."""
        if table not in self.tables():
            return 0
        return int(self.con.execute(f"SELECT count(*) FROM {TABLES[table].name}").fetchone()[0])

    # ------------------------------------------------------------------ writing
    @contextlib.contextmanager
    def transaction(self) -> Iterator[None]:
        """All writes inside the block commit together or not at all (blocks nest)."""
        if self._depth:
            self._depth += 1
            try:
                yield
            finally:
                self._depth -= 1
            return
        self.con.execute("BEGIN TRANSACTION")
        self._depth = 1
        try:
            yield
            self.con.execute("COMMIT")
        except BaseException:
            self.con.execute("ROLLBACK")
            raise
        finally:
            self._depth = 0

    def insert(self, table: str | Table, rows: Rows, *, replace: bool = False) -> int:
        """Insert ``rows`` (a frame, a mapping of columns or a list of row mappings) into
        ``table``; ``replace`` overwrites rows with the same key. Returns the row count."""
        t = TABLES[table] if isinstance(table, str) else table
        data = _columns(rows)
        unknown = [c for c in data if c not in t.names]
        if unknown:
            raise ValueError(f"table {t.name} has no columns {unknown}; it has {t.names}")
        cols = [c for c in t.columns if c.name in data]
        if not cols:
            return 0
        import pyarrow as pa

        arrow = pa.table({c.name: _array(data[c.name], c.type) for c in cols})
        names = ", ".join(f'"{c.name}"' for c in cols)
        verb = "INSERT OR REPLACE" if replace and t.key else "INSERT"
        with self.transaction():
            self.con.register("_recaudit_rows", arrow)
            try:
                self.con.execute(f"{verb} INTO {t.name} ({names}) SELECT {names} "
                                 "FROM _recaudit_rows")
            finally:
                self.con.unregister("_recaudit_rows")
        return arrow.num_rows

    def delete(self, table: str, **equal: Any) -> None:
        """Delete the rows of ``table`` whose columns equal ``equal`` (``None`` matches NULL)."""
        t = TABLES[table]
        bad = [c for c in equal if c not in t.names]
        if bad or not equal:
            raise ValueError(f"delete needs columns of {t.name}; got {list(equal) or 'none'}")
        where = " AND ".join(f'"{c}" IS NOT DISTINCT FROM ?' for c in equal)
        self.con.execute(f"DELETE FROM {t.name} WHERE {where}", list(equal.values()))

    def set_meta(self, key: str, value: Any) -> None:
        """Store JSON ``value`` under ``key`` (replacing it)."""
        self.insert(META, {"key": [key], "value": [json.dumps(value)]}, replace=True)

    def write_trial(self, row: Mapping[str, Any], queries: pd.DataFrame,
                    record: Mapping[str, Any] | None) -> None:
        """Write one finished audit trial atomically (all of it or nothing): its ``trials``
        row, its ``query_results`` and its perturbation record."""
        tid = row["trial_id"]
        frame = queries.assign(trial_id=tid)[QUERY_RESULTS.names]  # every column, or KeyError
        with self.transaction():
            self.delete("query_results", trial_id=tid)
            self.insert(TRIALS, [row], replace=True)
            self.insert(QUERY_RESULTS, frame)
            if record is not None:
                self.insert(PERTURBATIONS, {"trial_id": [tid], "record": [json.dumps(record)]},
                            replace=True)

    def replace_rows(self, table: str, rows: pd.DataFrame, key: Sequence[str]) -> int:
        """Replace every row of ``table`` sharing a ``key`` combination with ``rows`` (one
        transaction); returns the number of rows written."""
        with self.transaction():
            for combo in rows[list(key)].drop_duplicates().itertuples(index=False):
                self.delete(table, **{k: (None if _is_null(v) else v)
                                      for k, v in zip(key, combo, strict=True)})
            return self.insert(table, rows)

    # ------------------------------------------------------------------ reading
    def read(self, table: str, *, order: Sequence[str] = ()) -> pd.DataFrame:
        """Every row of ``table`` (declared columns; empty when the file lacks the table)."""
        t = TABLES[table]
        if t.name not in self.tables():
            return pd.DataFrame(columns=t.names)
        sql = f"SELECT * FROM {t.name}"
        present = set(self.con.execute(f"DESCRIBE {t.name}").df()["column_name"])
        keys = [c for c in order if c in present]  # a file of an older layout may lack some
        if keys:
            sql += " ORDER BY " + ", ".join(f'"{c}"' for c in keys)
        frame = self.con.execute(sql).df()
        for c in t.columns:  # an older file opened read-only: added columns read as defaults
            if c.name not in present and c.default is not None:
                frame[c.name] = self.con.execute(f"SELECT {c.default}").fetchone()[0]
        return frame

    def ids(self, table: str) -> set[str]:
        """Key values of ``table`` (its single key column)."""
        t = TABLES[table]
        if t.name not in self.tables():
            return set()
        return {r[0] for r in self.con.execute(f'SELECT "{t.key[0]}" FROM {t.name}').fetchall()}

    def finished(self) -> set[str]:
        """Ids of the finished audit trials."""
        if "trials" not in self.tables():
            return set()
        rows = self.con.execute("SELECT trial_id FROM trials WHERE status = 'done'").fetchall()
        return {r[0] for r in rows}

    def meta(self) -> dict[str, Any]:
        if "meta" not in self.tables():
            return {}
        return {k: json.loads(v) for k, v in self.con.execute("SELECT * FROM meta").fetchall()}

    def records(self) -> dict[str, Any]:
        """Perturbation record of every audit trial, by trial id."""
        if "perturbations" not in self.tables():
            return {}
        return {t: json.loads(r) for t, r in
                self.con.execute("SELECT trial_id, record FROM perturbations").fetchall()}

    def trials(self) -> pd.DataFrame:
        """The audit trials, by dataset, model, seed and perturbation."""
        return self.read("trials", order=("dataset", "model", "seed", "perturbation"))

    def query_results(self, trial_ids: Iterable[str] | None = None) -> pd.DataFrame:
        """Per-query rows (of ``trial_ids`` only, when given)."""
        if trial_ids is None:
            return self.read("query_results")
        return self.con.execute("SELECT * FROM query_results WHERE list_contains(?, trial_id)",
                                [list(trial_ids)]).df()

    def export(self, directory: str | Path, fmt: str = "parquet") -> list[Path]:
        """Write every non-empty table to ``directory`` as Parquet or CSV; returns the paths."""
        if fmt not in ("parquet", "csv"):
            raise RecauditError(f"unknown export format {fmt!r}; use parquet or csv")
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        out = []
        for name in TABLES:
            if name not in self.tables() or (self.count(name) == 0 and name != "meta"):
                continue
            path = directory / f"{name}.{fmt}"
            opts = "(FORMAT PARQUET)" if fmt == "parquet" else "(HEADER, DELIMITER ',')"
            quoted = path.as_posix().replace("'", "''")
            self.con.execute(f"COPY {name} TO '{quoted}' {opts}")
            out.append(path)
        return out
