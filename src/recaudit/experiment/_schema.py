"""Every table of a results store, declared once: names, column types, keys.

The :class:`~recaudit.experiment.Store` creates them from these declarations, writes rows
through Arrow tables typed by them (never by pandas' inferred dtypes) and reads them back;
studies and the report use the column lists defined here (``QUERY_METRICS``), never their own
spellings.

=================  ==========================================================================
table              one row per
=================  ==========================================================================
``trials``         finished stability-audit trial: ids, labels, the perturbation's
                   description (family, edit, count, position, reference), spec, timings,
                   versions, host, draw (repeated draws against one baseline)
``query_results``  (audit trial, test query): similarity of the two rank lists, accuracy of
                   both models
``perturbations``  audit trial: its perturbation record (JSON)
``fuzz_trials``    fuzzing trial (Shriver 2018 Chapter 4): distances, verdicts, record
``mirror_results`` MIRROR result value (Zhu et al. 2023): scenario, algorithm, mix, seed,
                   round, metric
``meta``           key: JSON facts (audit ``config`` and ``data``, ``fuzz.study``,
                   ``fuzz.data``, ``properties.table``, ``properties.evolving``, ...)
=================  ==========================================================================
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Column", "Table", "TABLES", "QUERY_METRICS", "TRIALS", "QUERY_RESULTS",
           "PERTURBATIONS", "FUZZ_TRIALS", "MIRROR_RESULTS", "META", "FUZZ_DISTANCES"]


@dataclass(frozen=True)
class Column:
    """A column: ``name`` and DuckDB ``type`` (``VARCHAR``, ``BIGINT``, ``DOUBLE``,
    ``BOOLEAN``, ``JSON``). ``default``: a SQL literal for a column added after stores were
    written; a store that lacks it gains it with that value (and reads show it)."""

    name: str
    type: str
    default: str | None = None


@dataclass(frozen=True)
class Table:
    """A table: ``name``, ``columns`` and its ``key`` columns (a row per key)."""

    name: str
    columns: tuple[Column, ...]
    key: tuple[str, ...] = ()

    @property
    def names(self) -> list[str]:
        return [c.name for c in self.columns]

    def ddl(self) -> str:
        cols = [f'"{c.name}" {c.type}' for c in self.columns]
        if self.key:
            cols.append("PRIMARY KEY (" + ", ".join(f'"{k}"' for k in self.key) + ")")
        return f"CREATE TABLE IF NOT EXISTS {self.name} ({', '.join(cols)})"


def _cols(spec: str) -> tuple[Column, ...]:
    """``"a VARCHAR, b BIGINT, c BIGINT DEFAULT 0"`` as columns."""
    out = []
    for part in spec.split(","):
        name, typ, *rest = part.split()
        out.append(Column(name, typ, rest[1] if rest[:1] == ["DEFAULT"] else None))
    return tuple(out)


#: Per-query similarity and accuracy columns of ``query_results`` (averaged per trial):
#: RBO_ext and its bounds, the finite RBO sum, average overlap, FRBO@k, Jaccard@k, and
#: reciprocal rank / hit@k / NDCG@k of the baseline (``_base``) and perturbed (``_pert``) model.
QUERY_METRICS = ("rbo", "rbo_min", "rbo_max", "rbo_trunc", "average_overlap", "frbo", "jaccard",
                 "rr_base", "rr_pert", "hit_base", "hit_pert", "ndcg_base", "ndcg_pert")

#: Distances of the fuzzing oracles (Shriver 2018 §4.1.3).
FUZZ_DISTANCES = ("aod", "jaccard", "topout")

TRIALS = Table("trials", _cols(
    "trial_id VARCHAR, baseline_key VARCHAR, audit VARCHAR, dataset VARCHAR, model VARCHAR, "
    "model_label VARCHAR, perturbation VARCHAR, family VARCHAR, edit VARCHAR, count BIGINT, "
    "position VARCHAR, reference BOOLEAN, seed BIGINT, spec JSON, data_fingerprint VARCHAR, "
    "n_queries BIGINT, status VARCHAR, started DOUBLE, finished DOUBLE, fit_seconds DOUBLE, "
    "rank_seconds DOUBLE, perturb_seconds DOUBLE, total_seconds DOUBLE, versions JSON, "
    "host VARCHAR, draw BIGINT DEFAULT 0"), key=("trial_id",))

QUERY_RESULTS = Table("query_results", _cols(
    "trial_id VARCHAR, query BIGINT, user BIGINT, target BIGINT, "
    + ", ".join(f"{m} DOUBLE" for m in QUERY_METRICS)))

PERTURBATIONS = Table("perturbations", _cols("trial_id VARCHAR, record JSON"),
                      key=("trial_id",))

FUZZ_TRIALS = Table("fuzz_trials", _cols(
    "trial_id VARCHAR, dataset VARCHAR, model VARCHAR, heuristic VARCHAR, spec VARCHAR, "
    "kind VARCHAR, size BIGINT, set_index BIGINT, seed BIGINT, k BIGINT, "
    "n_modifications BIGINT, n_ratings BIGINT, n_users BIGINT, gen_seconds DOUBLE, "
    "fit_seconds DOUBLE, f VARCHAR, aod DOUBLE, jaccard DOUBLE, topout DOUBLE, delta DOUBLE, "
    "stable_aod BOOLEAN, stable_jaccard BOOLEAN, stable_topout BOOLEAN, record JSON, "
    "trial JSON, data_fingerprint VARCHAR, finished DOUBLE"), key=("trial_id",))

MIRROR_RESULTS = Table("mirror_results", _cols(
    "scenario VARCHAR, algorithm VARCHAR, mix DOUBLE, seed BIGINT, round BIGINT, "
    "metric VARCHAR, value DOUBLE"))

META = Table("meta", _cols("key VARCHAR, value JSON"), key=("key",))

#: Every table, in creation (and export) order.
TABLES: dict[str, Table] = {t.name: t for t in (TRIALS, QUERY_RESULTS, PERTURBATIONS,
                                               FUZZ_TRIALS, MIRROR_RESULTS, META)}
