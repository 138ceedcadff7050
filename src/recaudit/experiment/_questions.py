"""The questions analyses and reports ask a results store, as methods (the only SQL outside
:mod:`._store`). Aggregations run inside DuckDB, so memory stays bounded however many test
queries a store holds."""

from __future__ import annotations

from typing import Any

import pandas as pd

from recaudit.experiment._schema import QUERY_METRICS, TABLES

__all__ = ["Questions"]

#: Labels of a trial the per-query questions group by.
TRIAL_KEYS = ("dataset", "model", "model_label", "perturbation")


def _metric(name: str) -> str:
    if name not in QUERY_METRICS:
        raise ValueError(f"unknown per-query metric {name!r}; use one of {list(QUERY_METRICS)}")
    return name


class Questions:
    """Mixin of :class:`~recaudit.experiment.Store`: read-only questions."""

    con: Any

    def tables(self) -> set[str]:  # pragma: no cover - provided by Store
        raise NotImplementedError

    def read(self, table: str, *, order: tuple[str, ...] = ()) -> pd.DataFrame:  # pragma: no cover
        raise NotImplementedError

    def _has(self, *tables: str) -> bool:
        return set(tables) <= self.tables()

    def trial_means(self, metrics: tuple[str, ...] = QUERY_METRICS) -> pd.DataFrame:
        """``trial_id`` and the mean over its test queries of every ``metrics`` column."""
        cols = [_metric(m) for m in metrics]
        if not self._has("query_results"):
            return pd.DataFrame(columns=["trial_id", *cols])
        return self.con.execute(
            "SELECT trial_id, " + ", ".join(f"avg({m}) AS {m}" for m in cols)
            + " FROM query_results GROUP BY trial_id").df()

    def per_query(self, *metrics: str) -> pd.DataFrame:
        """``trial_id``, ``user`` and ``metrics`` of every test query of every trial."""
        cols = ", ".join(_metric(m) for m in metrics)
        if not self._has("query_results"):
            return pd.DataFrame(columns=["trial_id", "user", *metrics])
        return self.con.execute(f'SELECT trial_id, "user", {cols} FROM query_results').df()

    def metric_distribution(self, metric: str) -> pd.DataFrame:
        """Box-plot statistics of per-query ``metric`` per (dataset, model, model_label,
        perturbation): ``n``, ``mean``, ``q1``, ``median``, ``q3`` (linear-interpolated
        quantiles over all queries of all seeds) and the Tukey whiskers ``whislo``/``whishi``
        (the most extreme values within 1.5 IQR of the quartiles); NULL and NaN are left out."""
        m = _metric(metric)
        if not self._has("query_results", "trials"):
            return pd.DataFrame()
        keys = ", ".join(TRIAL_KEYS)
        return self.con.execute(f"""
            WITH q AS (
                SELECT t.dataset, t.model, t.model_label, t.perturbation, r.{m} AS v
                FROM query_results r JOIN trials t USING (trial_id)
                WHERE r.{m} IS NOT NULL AND NOT isnan(r.{m})),
            stats AS (
                SELECT {keys}, count(*) AS n, avg(v) AS mean, quantile_cont(v, 0.25) AS q1,
                       quantile_cont(v, 0.5) AS median, quantile_cont(v, 0.75) AS q3
                FROM q GROUP BY ALL)
            SELECT s.*, '{m}' AS metric,
                   min(q.v) FILTER (WHERE q.v >= s.q1 - 1.5 * (s.q3 - s.q1)) AS whislo,
                   max(q.v) FILTER (WHERE q.v <= s.q3 + 1.5 * (s.q3 - s.q1)) AS whishi
            FROM stats s JOIN q USING ({keys})
            GROUP BY ALL""").df()

    def paired_values(self, perturbation: str, metric: str) -> pd.DataFrame:
        """Per-query ``metric`` of the trials of ``perturbation``: ``dataset``,
        ``model_label``, ``seed``, ``query`` and ``value``."""
        m = _metric(metric)
        if not self._has("query_results", "trials"):
            return pd.DataFrame(columns=["dataset", "model_label", "seed", "query", "value"])
        return self.con.execute(f"""
            SELECT t.dataset, t.model_label, t.seed, r.query, r.{m} AS value
            FROM query_results r JOIN trials t USING (trial_id)
            WHERE t.perturbation = ?""", [perturbation]).df()

    def fuzz_trials(self) -> pd.DataFrame:
        """The fuzzing trials, by model, heuristic, size and set."""
        return self.read("fuzz_trials", order=("model", "heuristic", "size", "set_index"))

    def mirror_results(self) -> pd.DataFrame:
        """The MIRROR result rows, in the order they were written."""
        return self.read("mirror_results")

    def holds(self) -> dict[str, int]:
        """Rows of every declared result table present in the file (``meta`` excluded)."""
        present = self.tables()
        return {name: int(self.con.execute(f"SELECT count(*) FROM {name}").fetchone()[0])
                for name in TABLES if name in present and name != "meta"}
