"""The audit's tables and its questions to a results store.

=================  ==========================================================================
table              one row per
=================  ==========================================================================
``trials``         finished trial: ids, labels, the perturbation's description (family,
                   edit, count, position, reference), spec, timings, versions, host, draw
``query_results``  (trial, test query): the similarity panel of the two rank lists, the
                   accuracy of both models (:data:`QUERY_METRICS`) and both top-k lists
                   (``top_base``, ``top_pert``: JSON arrays of the data's own item ids;
                   NULL in stores written before they were kept); who is affected
                   (:mod:`._slices`, :mod:`._changes`, :mod:`._exposure`) reads it
``perturbations``  trial: its perturbation record (JSON)
``datasets``       filtered interaction log the trials ran on: where it was read from and a
                   copy (Parquet), so the store alone answers (:mod:`._data`)
=================  ==========================================================================

:class:`AuditStore` is a :class:`~recaudit.experiment.Store` with the audit's questions; its
aggregations run inside DuckDB, so memory stays bounded however many test queries a store holds.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

import pandas as pd

from recaudit.experiment import Column, Store, Table, columns, register
from recaudit.metrics import ACCURACY, SIMILARITY

__all__ = ["QUERY_METRICS", "TRIALS", "QUERY_RESULTS", "PERTURBATIONS", "DATASETS",
           "AuditStore", "write_trial"]

#: Per-query columns of ``query_results``: the similarity panel, then the accuracy of the
#: baseline (``_base``) and the perturbed (``_pert``) model (:mod:`recaudit.metrics._panel`).
QUERY_METRICS = SIMILARITY + tuple(f"{m}_{tag}" for m in ACCURACY for tag in ("base", "pert"))

TRIALS = Table("trials", columns(
    "trial_id VARCHAR, baseline_key VARCHAR, audit VARCHAR, dataset VARCHAR, model VARCHAR, "
    "model_label VARCHAR, perturbation VARCHAR, family VARCHAR, edit VARCHAR, count BIGINT, "
    "position VARCHAR, reference BOOLEAN, seed BIGINT, spec JSON, data_fingerprint VARCHAR, "
    "n_queries BIGINT, status VARCHAR, started DOUBLE, finished DOUBLE, fit_seconds DOUBLE, "
    "rank_seconds DOUBLE, perturb_seconds DOUBLE, total_seconds DOUBLE, versions JSON, "
    "host VARCHAR, draw BIGINT DEFAULT 0", {
        "trial_id": "hash of the trial's spec and the data fingerprint: the same trial has the "
                    "same id in every store",
        "baseline_key": "hash identifying the unperturbed model the trial is compared with "
                        "(dataset, split, model and seed): trials that share it share one "
                        "baseline",
        "audit": "the audit's name (`name` of the audit configuration)",
        "dataset": "the dataset's label: its name, or the file's name for a file named after "
                   "it (`plays.csv`; stores written before kept `name:path`)",
        "model": "the model's registered name (e.g. `gru4rec`)",
        "model_label": "the model with every parameter, `name(k=v,...)` plus `+method(...)` "
                       "when stabilised, or the label given to the model (`label = ...`)",
        "perturbation": "the perturbation's name (e.g. `casper-delete-k4`), or the canonical "
                        "JSON of a perturbation given as a table",
        "family": "the perturbation without its count (e.g. `casper-delete`, `remove-end`, "
                  "`fuzz:AMR`; `+inputs` kept)",
        "edit": "what it does to interactions: `delete`, `insert`, `replace` (fuzzing: "
                "`add`, `remove`, `change`, `mixed`); NULL for a reference trial",
        "count": "interactions edited (items removed per user for position removal, "
                 "modifications for fuzzing); NULL for a reference trial",
        "position": "`beginning`, `middle` or `end` for position removal, else NULL",
        "reference": "true when the trial changes no data (`rerun`, `none`, `seed-only`, an "
                     "empty fuzz set): it measures the model's own noise floor",
        "seed": "the training seed of both models (the perturbed one of `seed-only` trains "
                "with a seed derived from it)",
        "spec": "the trial's canonical spec as JSON: dataset, split, model, seed, "
                "perturbation, metrics (and draw when not 0)",
        "data_fingerprint": "SHA-256 of the filtered interaction log the trial was run on",
        "n_queries": "test queries both models ranked (rows in `query_results`)",
        "status": "`done`: only finished trials are written",
        "started": "when the trial started, in seconds since the Unix epoch",
        "finished": "when the trial finished, in seconds since the Unix epoch",
        "fit_seconds": "seconds spent training the perturbed model, plus the baseline's "
                       "training in the one trial that counts it (the first of its group; "
                       "the seconds are kept with the cached baseline)",
        "rank_seconds": "seconds spent ranking the test queries with the perturbed model, "
                        "plus the baseline's ranking in the trial that counts it",
        "perturb_seconds": "seconds spent choosing and applying the edits (including a model "
                           "a selector trains, e.g. TracIn's)",
        "total_seconds": "wall-clock seconds of the whole trial, data preparation included, "
                         "plus its baseline's when it counts one made by another job",
        "versions": "JSON object of the versions of recaudit, Python and the numeric "
                    "libraries, the device models were trained on, the version of a "
                    "sequential model's arithmetic (`implementation`, with the recurrence "
                    "it ran) and the size of the stack it trained in (`stack`, when above 1)",
        "host": "the host name of the machine that ran the trial",
        "draw": "which repeated draw of the perturbation against the same baseline (0: the "
                "first; see `draws`)"}), key=("trial_id",),
    doc="One finished audit trial: a model trained on perturbed data and compared with its "
        "baseline on every test query.")

#: What each per-query column of ``query_results`` holds.
_SIMILARITY_DOCS = {
    "rbo": "extrapolated rank-biased overlap RBO_ext (Webber et al. 2010, eq. 32) of the "
           "baseline's and the perturbed model's lists, persistence `metrics.p`",
    "rbo_min": "lower bound of RBO over the compared lists (nothing below them matches)",
    "rbo_max": "upper bound of RBO: `rbo_min` plus the residual (everything below them "
               "matches)",
    "rbo_trunc": "the finite RBO sum of Oh et al. 2022, "
                 "(1-p) sum_d p^(d-1) overlap_d / d, down to the compared depth",
    "average_overlap": "average overlap down to the compared depth (what CASPER's code "
                       "calls RBO)",
    "frbo": "FRBO@k of Betello et al. 2023 (RBO@k min-max normalised, k = `metrics.k`); "
            "NaN when a list holds fewer than k items",
    "jaccard": "Jaccard similarity of the two top-k item sets (k = `metrics.k`)"}
_ACCURACY_DOCS = {
    "mrr": "reciprocal rank of the query's target in the {model}'s list (0 when not listed); "
           "its mean over queries is the MRR",
    "hit": "1 when the query's target is in the {model}'s top k (HR@k), else 0",
    "ndcg": "NDCG@k of the {model}'s list with the target as the one relevant item"}
_MODEL = {"base": "baseline model", "pert": "perturbed model"}
_METRIC_DOCS = {**_SIMILARITY_DOCS, **{
    f"{m}_{tag}": _ACCURACY_DOCS[m].format(model=_MODEL[tag])
    for m in ACCURACY for tag in ("base", "pert")}}

QUERY_RESULTS = Table("query_results", columns(
    "trial_id VARCHAR, query BIGINT, user BIGINT, target BIGINT", {
        "trial_id": "the trial (its row in `trials`)",
        "query": "the test query's number, 0 .. n_queries-1 (the same query in every trial "
                 "of the same dataset and split)",
        "user": "the query's user, as the internal code of the data's user ids",
        "target": "the query's held-out next item, as the internal code of the data's item "
                  "ids"})
    + tuple(Column(m, "DOUBLE", renamed_from={"mrr_base": "rr_base",
                                              "mrr_pert": "rr_pert"}.get(m),
                   doc=_METRIC_DOCS[m])
            for m in QUERY_METRICS)
    + columns("top_base VARCHAR DEFAULT NULL, top_pert VARCHAR DEFAULT NULL", {
        "top_base": "the baseline model's top k for the query: a JSON array of the data's "
                    "own item ids, best first (what `recaudit changes` and `recaudit "
                    "exposure` read)",
        "top_pert": "the perturbed model's top k for the query: a JSON array of the data's "
                    "own item ids, best first"}),
    doc="One test query of one trial: the similarity of the two models' rank lists and the "
        "accuracy of each.")

PERTURBATIONS = Table("perturbations", columns("trial_id VARCHAR, record JSON", {
    "trial_id": "the trial (its row in `trials`)",
    "record": "what the perturbation changed, as JSON: its kind, selector, rows (internal "
              "row and code numbers of the training log), scores and parameters, and "
              "`in_your_ids` with the edits in the data's own ids and timestamps"}),
    key=("trial_id",),
    doc="The record of one trial's perturbation: exactly which training interactions it "
        "deleted, inserted or replaced.")

DATASETS = Table("datasets", columns(
    "data_fingerprint VARCHAR, dataset VARCHAR, path VARCHAR, resolved_path VARCHAR, "
    "interactions BIGINT, log BLOB", {
        "data_fingerprint": "SHA-256 of the filtered interaction log (the trials' "
                            "`data_fingerprint`)",
        "dataset": "the dataset's label, as the trials name it",
        "path": "the file as the audit's configuration named it (NULL for a registered or "
                "the synthetic dataset)",
        "resolved_path": "the file's absolute path when the audit ran (NULL without a file)",
        "interactions": "rows of the filtered log",
        "log": "the filtered log as Parquet (zstd; ids, timestamps, ratings: what "
               "`recaudit.data.read_parquet` reads back exactly), so that slices, changes, "
               "exposure and the report need the store alone; NULL where it would not read "
               "back to the same fingerprint"}),
    key=("data_fingerprint",),
    doc="One filtered interaction log an audit's trials ran on: where it was read from, and "
        "a copy of it.")

# declared here, where every reader of a store finds them (recaudit.studies imports this
# module, not the audit's data module): a store that keeps its data merges
register(TRIALS, QUERY_RESULTS, PERTURBATIONS, DATASETS)

#: Labels of a trial the per-query questions group by.
TRIAL_KEYS = ("dataset", "model", "model_label", "perturbation")


def write_trial(store: Store, row: Mapping[str, Any], queries: pd.DataFrame,
                record: Mapping[str, Any] | None) -> None:
    """Write one finished trial atomically (all of it or nothing): its ``trials`` row, its
    ``query_results`` and its perturbation record."""
    tid = row["trial_id"]
    frame = queries.assign(trial_id=tid)
    for c in ("top_base", "top_pert"):  # optional: frames built without the lists
        if c not in frame:
            frame[c] = None
    frame = frame[QUERY_RESULTS.names]  # every other column, or KeyError
    with store.transaction():
        store.delete(QUERY_RESULTS, trial_id=tid)
        store.insert(TRIALS, [row], replace=True)
        store.insert(QUERY_RESULTS, frame)
        if record is not None:
            store.insert(PERTURBATIONS, {"trial_id": [tid], "record": [json.dumps(record)]},
                         replace=True)


def _metric(name: str) -> str:
    if name not in QUERY_METRICS:
        raise ValueError(f"unknown per-query metric {name!r}; use one of {list(QUERY_METRICS)}")
    return name


class AuditStore(Store):
    """A results store with the audit's tables and questions."""

    @classmethod
    def of(cls, store: Store) -> AuditStore:
        """The audit's view of an open store (the same connection, the audit's questions)."""
        if isinstance(store, AuditStore):
            return store
        view = cls.__new__(cls)
        view.__dict__.update(store.__dict__)
        return view

    def ensure_audit(self) -> None:
        self.ensure(TRIALS, QUERY_RESULTS, PERTURBATIONS)

    def _has(self, *tables: str) -> bool:
        return set(tables) <= self.tables()

    def _raw(self, name: str) -> str:
        """A ``query_results`` column as this file names it (quoted)."""
        return f'"{self.column("query_results", name)}"'

    # ------------------------------------------------------------------ writing
    def write_trial(self, row: Mapping[str, Any], queries: pd.DataFrame,
                    record: Mapping[str, Any] | None) -> None:
        """:func:`write_trial` into this store."""
        write_trial(self, row, queries, record)

    # ------------------------------------------------------------------ reading
    def finished(self) -> set[str]:
        """Ids of the finished trials."""
        if "trials" not in self.tables():
            return set()
        rows = self.con.execute("SELECT trial_id FROM trials WHERE status = 'done'").fetchall()
        return {r[0] for r in rows}

    def counted_baselines(self) -> set[str]:
        """Baseline keys of the finished trials (their baselines' seconds are counted)."""
        if "trials" not in self.tables():
            return set()
        rows = self.con.execute("SELECT DISTINCT baseline_key FROM trials "
                                "WHERE status = 'done'").fetchall()
        return {r[0] for r in rows}

    def records(self) -> dict[str, Any]:
        """Perturbation record of every trial, by trial id."""
        if "perturbations" not in self.tables():
            return {}
        return {t: json.loads(r) for t, r in
                self.con.execute("SELECT trial_id, record FROM perturbations").fetchall()}

    def trials(self) -> pd.DataFrame:
        """The trials, by dataset, model, seed, perturbation and draw."""
        return self.read(TRIALS, order=("dataset", "model", "seed", "perturbation", "draw"))

    def query_results(self, trial_ids: Iterable[str] | None = None) -> pd.DataFrame:
        """Per-query rows (of ``trial_ids`` only, when given)."""
        frame = self.read(QUERY_RESULTS) if trial_ids is None else None
        if frame is not None:
            return frame
        cols = ", ".join(f'{self._raw(c)} AS "{c}"' for c in QUERY_RESULTS.names)
        return self.sql(f"SELECT {cols} FROM query_results WHERE list_contains(?, trial_id)",
                        [list(trial_ids or ())])

    def trial_means(self, metrics: tuple[str, ...] = QUERY_METRICS) -> pd.DataFrame:
        """``trial_id`` and the mean over its test queries of every ``metrics`` column."""
        cols = [_metric(m) for m in metrics]
        if not self._has("query_results"):
            return pd.DataFrame(columns=["trial_id", *cols])
        return self.sql("SELECT trial_id, " + ", ".join(
            f'avg({self._raw(m)}) AS "{m}"' for m in cols)
            + " FROM query_results GROUP BY trial_id")

    def per_query(self, *metrics: str) -> pd.DataFrame:
        """``trial_id``, ``user`` and ``metrics`` of every test query of every trial."""
        cols = ", ".join(f'{self._raw(_metric(m))} AS "{m}"' for m in metrics)
        if not self._has("query_results"):
            return pd.DataFrame(columns=["trial_id", "user", *metrics])
        return self.sql(f'SELECT trial_id, "user", {cols} FROM query_results')

    def query_values(self, metrics: Iterable[str], dataset: str, model_label: str,
                     fingerprint: str | None = None) -> pd.DataFrame:
        """Per-query ``metrics`` of every finished trial of (``dataset``, ``model_label``) —
        of one filtered log when ``fingerprint`` is given: ``perturbation``, ``seed``,
        ``draw``, ``query``, the metrics and ``trial_id``."""
        names = [_metric(m) for m in metrics]
        if not self._has("query_results", "trials"):
            return pd.DataFrame(columns=["perturbation", "seed", "draw", "query", *names,
                                         "trial_id"])
        draw = "coalesce(t.draw, 0) AS draw" if "draw" in self._present("trials") \
            else "0 AS draw"
        cols = ", ".join(f'r.{self._raw(m)} AS "{m}"' for m in names)
        return self.sql(f"""
            SELECT t.perturbation, t.seed, {draw}, r.query, {cols}, t.trial_id
            FROM query_results r JOIN trials t USING (trial_id)
            WHERE t.dataset = ? AND t.model_label = ? AND t.status = 'done'
              {"" if fingerprint is None else "AND t.data_fingerprint = ?"}
            ORDER BY t.perturbation, t.seed, draw, r.query""",
            [dataset, model_label] + ([] if fingerprint is None else [fingerprint]))

    def metric_distribution(self, metric: str) -> pd.DataFrame:
        """Box-plot statistics of per-query ``metric`` per (dataset, model, model_label,
        perturbation): ``n``, ``mean``, ``q1``, ``median``, ``q3`` (linear-interpolated
        quantiles over all queries of all seeds) and the Tukey whiskers ``whislo``/``whishi``
        (the most extreme values within 1.5 IQR of the quartiles); NULL and NaN are left out."""
        _metric(metric)
        m = self._raw(metric)
        if not self._has("query_results", "trials"):
            return pd.DataFrame()
        keys = ", ".join(TRIAL_KEYS)
        return self.sql(f"""
            WITH q AS (
                SELECT t.dataset, t.model, t.model_label, t.perturbation, r.{m} AS v
                FROM query_results r JOIN trials t USING (trial_id)
                WHERE r.{m} IS NOT NULL AND NOT isnan(r.{m})),
            stats AS (
                SELECT {keys}, count(*) AS n, avg(v) AS mean, quantile_cont(v, 0.25) AS q1,
                       quantile_cont(v, 0.5) AS median, quantile_cont(v, 0.75) AS q3
                FROM q GROUP BY ALL)
            SELECT s.*, '{metric}' AS metric,
                   min(q.v) FILTER (WHERE q.v >= s.q1 - 1.5 * (s.q3 - s.q1)) AS whislo,
                   max(q.v) FILTER (WHERE q.v <= s.q3 + 1.5 * (s.q3 - s.q1)) AS whishi
            FROM stats s JOIN q USING ({keys})
            GROUP BY ALL""")

    def paired_values(self, perturbation: str, metric: str) -> pd.DataFrame:
        """Per-query ``metric`` of the trials of ``perturbation``: ``dataset``,
        ``model_label``, ``seed``, ``draw``, ``query`` and ``value``."""
        _metric(metric)
        m = self._raw(metric)
        if not self._has("query_results", "trials"):
            return pd.DataFrame(columns=["dataset", "model_label", "seed", "draw", "query",
                                         "value"])
        draw = "t.draw" if "draw" in self._present("trials") else "0 AS draw"
        return self.sql(f"""
            SELECT t.dataset, t.model_label, t.seed, {draw}, r.query, r.{m} AS value
            FROM query_results r JOIN trials t USING (trial_id)
            WHERE t.perturbation = ?""", [perturbation])
