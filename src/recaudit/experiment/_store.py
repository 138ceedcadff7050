"""The results store: one DuckDB file holding the tables the studies declare.

Writes go through Arrow tables typed by the declared schema (never through pandas dtype
inference, which older DuckDB versions do not understand for pandas 3's string dtype); each
call of :meth:`Store.insert` (or a :meth:`Store.transaction` block) is one transaction, so a
process killed at any moment (even SIGKILL) leaves either all of it or nothing. DuckDB allows
one writing process per file: a second one gets :class:`StoreBusyError` (a running study
publishes its progress beside the store, :func:`recaudit.experiment.read_progress`). A write
the file system refuses (a full disk, a read-only folder) is a
:class:`~recaudit.errors.StorageError` naming the file, and leaves what was committed before.

The store knows no study: tables are declared by the studies (:mod:`._schema`), created when a
study first writes them (:meth:`Store.ensure`) and migrated there (columns added with their
default, columns renamed). A study's questions (its SQL) live with the study and run through
:meth:`Store.sql`; :meth:`Store.column` gives a renamed column's name in an older file opened
read-only.
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, Self, TypeAlias

import numpy as np
import pandas as pd

from recaudit._files import writing
from recaudit.errors import Interrupted, RecauditError, StoreBusyError
from recaudit.experiment._schema import META, TABLES, Table

__all__ = ["Store", "StoreBusyError"]

log = logging.getLogger(__name__)

Rows: TypeAlias = pd.DataFrame | Mapping[str, Any] | Sequence[Mapping[str, Any]]


#: The names ``SHOW TABLES`` lists (tables and views of the current schema, this file's and
#: the connection's temporary ones), from the catalogue functions (:meth:`Store.tables`).
_TABLES = ("SELECT table_name FROM duckdb_tables() WHERE schema_name = current_schema() "
           "AND database_name IN (current_database(), 'temp') "
           "UNION ALL SELECT view_name FROM duckdb_views() WHERE NOT internal "
           "AND schema_name = current_schema() AND database_name IN (current_database(), 'temp')")


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
    if typ == "BLOB":
        return bytes(v)
    return str(v)


def _array(values: Any, typ: str) -> Any:
    """``values`` as an Arrow array of the column type (NaN and None are NULL)."""
    import pyarrow as pa

    patype = {"VARCHAR": pa.string(), "JSON": pa.string(), "BIGINT": pa.int64(),
              "DOUBLE": pa.float64(), "BOOLEAN": pa.bool_(), "BLOB": pa.binary()}[typ]
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


def _table(table: str | Table) -> Table:
    if isinstance(table, Table):
        return table
    if table not in TABLES:
        raise RecauditError(f"no study declares a table {table!r}; declared: "
                            f"{', '.join(sorted(TABLES))}")
    return TABLES[table]


class Store:
    """A results store (use as a context manager). ``read_only`` opens an existing file."""

    def __init__(self, path: str | Path, *, read_only: bool = False) -> None:
        import duckdb

        self.path = Path(path)
        self.read_only = read_only
        if read_only and not self.path.exists():
            raise RecauditError(f"no results store at {self.path}; run a study first "
                                "(recaudit run CONFIG, recaudit audit ...)")
        if not read_only:
            with writing(self.path.parent, action="create the folder"):
                self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            with writing(self.path, action="open the results store"):
                self.con = duckdb.connect(str(self.path), read_only=read_only)
        except duckdb.IOException as exc:
            if "lock" in str(exc).lower():
                raise StoreBusyError(
                    f"the results store {self.path} is in use by another process (`recaudit "
                    f"status {self.path}` shows what it is doing); wait for it to finish, "
                    "write to another --output file, or read a copy (copy the .duckdb and its "
                    ".wal)") from None
            raise RecauditError(f"cannot open results store {self.path}: {exc}") from None
        except duckdb.Error as exc:
            raise RecauditError(f"{self.path} is not a results store DuckDB can open: {exc}",
                                ) from None
        self._depth = 0
        self._renamed: dict[tuple[str, str], str] = {}  # (table, name) -> name in this file
        if not read_only:
            try:
                self.ensure(META)
            except BaseException:
                self.con.close()
                raise
        self._scan_renames()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        with writing(self.path):  # closing writes the last changes into the file
            self.con.close()

    # ------------------------------------------------------------------ structure
    def tables(self) -> set[str]:
        """Names of the tables in the file (with the views and temporary tables this
        connection sees, as ``SHOW TABLES`` lists them).

        Read from DuckDB's catalogue functions: ``SHOW TABLES`` gives the same names at three
        times the cost (it sorts and formats a result), and a study asks before every write
        and read (measured: a fifth of a small audit's store time)."""
        return {r[0] for r in self.con.execute(_TABLES).fetchall()}

    def _present(self, name: str) -> set[str]:
        """The columns of table ``name`` (``DESCRIBE``'s first column, fetched as tuples: a
        frame cost ten times as much)."""
        return {r[0] for r in self.con.execute(f"DESCRIBE {name}").fetchall()}

    def ensure(self, *tables: Table) -> None:
        """Create the missing ``tables``; migrate those present (rename renamed columns, add
        added ones with their default). A table lacking a column without a default was
        written by an older layout that cannot be extended: an error."""
        from recaudit.experiment._schema import register

        register(*tables)
        present = self.tables()
        for table in tables:
            if table.name not in present:
                with writing(self.path):
                    self.con.execute(table.ddl())
                continue
            have = self._present(table.name)
            for c in table.columns:
                if c.name in have:
                    continue
                if c.renamed_from is not None and c.renamed_from in have:
                    self.con.execute(f'ALTER TABLE {table.name} RENAME COLUMN '
                                     f'"{c.renamed_from}" TO "{c.name}"')
                elif c.default is not None:
                    self.con.execute(f'ALTER TABLE {table.name} ADD COLUMN "{c.name}" '
                                     f"{c.type} DEFAULT {c.default}")
                else:
                    continue
                have.add(c.name)
            missing = [c for c in table.names if c not in have]
            if missing:
                self.close()
                raise RecauditError(
                    f"{self.path} was written by an older recaudit: table {table.name!r} "
                    f"lacks the columns {', '.join(missing)}. Write to a new store file "
                    "(--output / output = ...) or re-run the study into one")
        self._scan_renames()

    def _scan_renames(self) -> None:
        present = self.tables()
        for t in TABLES.values():
            if t.name not in present or not any(c.renamed_from for c in t.columns):
                continue
            have = self._present(t.name)
            for c in t.columns:
                if c.renamed_from and c.name not in have and c.renamed_from in have:
                    self._renamed[(t.name, c.name)] = c.renamed_from

    def column(self, table: str, name: str) -> str:
        """The name of declared column ``name`` of ``table`` in this file (its old name in an
        older file opened read-only, where it could not be renamed)."""
        return self._renamed.get((table, name), name)

    def count(self, table: str | Table) -> int:
        """Rows of ``table`` (0 when the file lacks it)."""
        name = table.name if isinstance(table, Table) else table
        if name not in self.tables():
            return 0
        (n,) = self.con.execute(f"SELECT count(*) FROM {name}").fetchone() or (0,)
        return int(n)

    def holds(self) -> dict[str, int]:
        """Rows of every table in the file but ``meta`` and ``plans``."""
        return {name: self.count(name) for name in sorted(self.tables())
                if name not in ("meta", "plans")}

    # ------------------------------------------------------------------ writing
    @contextlib.contextmanager
    def transaction(self) -> Iterator[None]:
        """All writes inside the block commit together or not at all (blocks nest). A signal
        that DuckDB turned into its own error during a query (``Query interrupted``) rolls
        back and leaves as the :class:`~recaudit.errors.Interrupted` it was."""
        if self._depth:
            self._depth += 1
            try:
                yield
            finally:
                self._depth -= 1
            return
        import duckdb

        self.con.execute("BEGIN TRANSACTION")
        self._depth = 1
        try:
            with writing(self.path):
                yield
                self.con.execute("COMMIT")
        except BaseException as exc:
            with contextlib.suppress(duckdb.Error):  # a failed COMMIT has ended it already
                self.con.execute("ROLLBACK")
            if (stop := Interrupted.swallowed(exc)) is not None:
                raise stop from None
            raise
        finally:
            self._depth = 0

    def insert(self, table: str | Table, rows: Rows, *, replace: bool = False) -> int:
        """Insert ``rows`` (a frame, a mapping of columns or a list of row mappings) into
        ``table`` (created if missing); ``replace`` overwrites rows with the same key. Returns
        the row count."""
        t = _table(table)
        if t.name not in self.tables():
            self.ensure(t)
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

    def delete(self, table: str | Table, **equal: Any) -> None:
        """Delete the rows of ``table`` whose columns equal ``equal`` (``None`` matches NULL)."""
        t = _table(table)
        bad = [c for c in equal if c not in t.names]
        if bad or not equal:
            raise ValueError(f"delete needs columns of {t.name}; got {list(equal) or 'none'}")
        if t.name not in self.tables():
            return
        where = " AND ".join(f'"{c}" IS NOT DISTINCT FROM ?' for c in equal)
        self.con.execute(f"DELETE FROM {t.name} WHERE {where}", list(equal.values()))

    def set_meta(self, key: str, value: Any) -> None:
        """Store JSON ``value`` under ``key`` (replacing it)."""
        self.insert(META, {"key": [key], "value": [json.dumps(value)]}, replace=True)

    def replace_rows(self, table: str | Table, rows: pd.DataFrame, key: Sequence[str]) -> int:
        """Replace every row of ``table`` sharing a ``key`` combination with ``rows`` (one
        transaction); returns the number of rows written."""
        with self.transaction():
            for combo in rows[list(key)].drop_duplicates().itertuples(index=False):
                self.delete(table, **{k: (None if _is_null(v) else v)
                                      for k, v in zip(key, combo, strict=True)})
            return self.insert(table, rows)

    # ------------------------------------------------------------------ reading
    def read(self, table: str | Table, *, order: Sequence[str] = ()) -> pd.DataFrame:
        """Every row of ``table`` with its declared columns (empty when the file lacks the
        table; renamed columns under their new name, added ones with their default)."""
        t = _table(table)
        if t.name not in self.tables():
            return pd.DataFrame(columns=t.names)
        present = self._present(t.name)
        cols, shown = [], set()
        for c in t.columns:
            if c.name in present or (t.name, c.name) in self._renamed:
                cols.append(f'"{self.column(t.name, c.name)}" AS "{c.name}"')
            elif c.default is not None:
                cols.append(f'{c.default} AS "{c.name}"')
            else:
                continue
            shown.add(c.name)
        extra = [f'"{c}"' for c in sorted(present - set(t.names)
                                           - {o for (n, _), o in self._renamed.items()
                                              if n == t.name})]
        sql = f"SELECT {', '.join(cols + extra)} FROM {t.name}"
        keys = [c for c in order if c in shown]
        if keys:
            sql += " ORDER BY " + ", ".join(f'"{c}"' for c in keys)
        return self.con.execute(sql).df()

    def sql(self, query: str, params: Sequence[Any] = ()) -> pd.DataFrame:
        """The result of a read-only SQL ``query`` as a frame (a study's questions)."""
        return self.con.execute(query, list(params)).df()

    def ids(self, table: str | Table) -> set[str]:
        """Key values of ``table`` (its single key column)."""
        t = _table(table)
        if t.name not in self.tables():
            return set()
        return {r[0] for r in self.con.execute(f'SELECT "{t.key[0]}" FROM {t.name}').fetchall()}

    def meta(self) -> dict[str, Any]:
        if "meta" not in self.tables():
            return {}
        return {k: json.loads(v) for k, v in self.con.execute("SELECT * FROM meta").fetchall()}

    def plans(self, kind: str | None = None) -> pd.DataFrame:
        """The recorded plans: ``kind``, ``plan``, ``trial_id`` (of one study kind)."""
        df = self.read("plans")
        return df if kind is None else df[df["kind"] == kind].reset_index(drop=True)

    def export(self, directory: str | Path, fmt: str = "parquet") -> list[Path]:
        """Write every non-empty table of the file to ``directory`` as Parquet or CSV;
        returns the paths (``meta`` always)."""
        if fmt not in ("parquet", "csv"):
            raise RecauditError(f"unknown export format {fmt!r}; use parquet or csv")
        directory = Path(directory)
        with writing(directory, action="create the folder"):
            directory.mkdir(parents=True, exist_ok=True)
        out = []
        order = [n for n in TABLES if n in self.tables()]
        order += sorted(self.tables() - set(order))
        for name in order:
            if self.count(name) == 0 and name != "meta":
                continue
            path = directory / f"{name}.{fmt}"
            opts = "(FORMAT PARQUET)" if fmt == "parquet" else "(HEADER, DELIMITER ',')"
            quoted = path.as_posix().replace("'", "''")
            with writing(path):
                self.con.execute(f"COPY {name} TO '{quoted}' {opts}")
            out.append(path)
        return out
