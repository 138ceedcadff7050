"""The results store: one DuckDB file per audit.

Tables
------
``trials``
    one row per finished trial: ids, spec (JSON), labels, seed, timings, versions, host.
``query_results``
    one row per (trial, test query): similarity of the two rank lists and accuracy of both
    models.
``perturbations``
    the perturbation record of each trial (JSON).
``meta``
    key/value facts about the audit (config, data summaries).

Every trial is written in a single transaction, so a process killed at any moment (even with
SIGKILL) leaves either the whole trial or nothing; re-running an audit skips the trials already
in ``trials``. DuckDB allows one writing process per file: a second process that tries to open
the same store gets a :class:`~recaudit.errors.RecauditError` saying the store is in use.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pandas as pd

from recaudit.errors import RecauditError

__all__ = ["Store", "StoreBusyError"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS trials (
    trial_id VARCHAR PRIMARY KEY,
    baseline_key VARCHAR,
    audit VARCHAR,
    dataset VARCHAR,
    model VARCHAR,
    model_label VARCHAR,
    perturbation VARCHAR,
    seed BIGINT,
    spec JSON,
    data_fingerprint VARCHAR,
    n_queries BIGINT,
    status VARCHAR,
    started DOUBLE,
    finished DOUBLE,
    fit_seconds DOUBLE,
    rank_seconds DOUBLE,
    perturb_seconds DOUBLE,
    total_seconds DOUBLE,
    versions JSON,
    host VARCHAR
);
CREATE TABLE IF NOT EXISTS query_results (
    trial_id VARCHAR,
    query BIGINT,
    "user" BIGINT,
    target BIGINT,
    rbo DOUBLE,
    rbo_min DOUBLE,
    rbo_max DOUBLE,
    rbo_trunc DOUBLE,
    average_overlap DOUBLE,
    frbo DOUBLE,
    jaccard DOUBLE,
    rr_base DOUBLE,
    rr_pert DOUBLE,
    hit_base DOUBLE,
    hit_pert DOUBLE,
    ndcg_base DOUBLE,
    ndcg_pert DOUBLE
);
CREATE TABLE IF NOT EXISTS perturbations (
    trial_id VARCHAR PRIMARY KEY,
    record JSON
);
CREATE TABLE IF NOT EXISTS meta (
    key VARCHAR PRIMARY KEY,
    value JSON
);
"""

QUERY_COLUMNS = ["query", "user", "target", "rbo", "rbo_min", "rbo_max", "rbo_trunc",
                 "average_overlap", "frbo", "jaccard", "rr_base", "rr_pert", "hit_base",
                 "hit_pert", "ndcg_base", "ndcg_pert"]


class StoreBusyError(RecauditError):
    """Another process holds the store open for writing."""


class Store:
    """A DuckDB results store (use as a context manager)."""

    def __init__(self, path: str | Path, *, read_only: bool = False) -> None:
        import duckdb

        self.path = Path(path)
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
        if not read_only:
            self.con.execute(_SCHEMA)

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.con.close()

    # ------------------------------------------------------------------ writing
    def set_meta(self, key: str, value: Any) -> None:
        self.con.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", [key, json.dumps(value)])

    def write_trial(self, row: dict[str, Any], queries: pd.DataFrame,
                    record: dict[str, Any] | None) -> None:
        """Write one finished trial atomically (all of it or nothing)."""
        cols = list(row)
        self.con.execute("BEGIN TRANSACTION")
        try:
            self.con.execute("DELETE FROM query_results WHERE trial_id = ?", [row["trial_id"]])
            self.con.execute(
                f"INSERT OR REPLACE INTO trials ({', '.join(cols)}) VALUES "
                f"({', '.join('?' for _ in cols)})", [row[c] for c in cols])
            frame = queries.assign(trial_id=row["trial_id"])[["trial_id", *QUERY_COLUMNS]]
            self.con.register("_q", frame)
            self.con.execute("INSERT INTO query_results SELECT * FROM _q")
            self.con.unregister("_q")
            if record is not None:
                self.con.execute("INSERT OR REPLACE INTO perturbations VALUES (?, ?)",
                                 [row["trial_id"], json.dumps(record)])
            self.con.execute("COMMIT")
        except BaseException:
            self.con.execute("ROLLBACK")
            raise

    # ------------------------------------------------------------------ reading
    def finished(self) -> set[str]:
        rows = self.con.execute("SELECT trial_id FROM trials WHERE status = 'done'").fetchall()
        return {r[0] for r in rows}

    def trials(self) -> pd.DataFrame:
        return self.con.execute("SELECT * FROM trials ORDER BY dataset, model, seed, "
                                "perturbation").df()

    def query_results(self, trial_ids: Iterable[str] | None = None) -> pd.DataFrame:
        if trial_ids is None:
            return self.con.execute("SELECT * FROM query_results").df()
        ids = list(trial_ids)
        return self.con.execute("SELECT * FROM query_results WHERE list_contains(?, trial_id)",
                                [ids]).df()

    def records(self) -> dict[str, Any]:
        return {t: json.loads(r) for t, r in
                self.con.execute("SELECT trial_id, record FROM perturbations").fetchall()}

    def meta(self) -> dict[str, Any]:
        return {k: json.loads(v) for k, v in self.con.execute("SELECT * FROM meta").fetchall()}

    def export(self, directory: str | Path, fmt: str = "parquet") -> list[Path]:
        """Write every table to ``directory`` as Parquet or CSV files; returns the paths."""
        if fmt not in ("parquet", "csv"):
            raise RecauditError(f"unknown export format {fmt!r}; use parquet or csv")
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        out = []
        for table in ("trials", "query_results", "perturbations", "meta"):
            path = directory / f"{table}.{fmt}"
            opts = "(FORMAT PARQUET)" if fmt == "parquet" else "(HEADER, DELIMITER ',')"
            self.con.execute(f"COPY {table} TO '{path.as_posix()}' {opts}")
            out.append(path)
        return out
