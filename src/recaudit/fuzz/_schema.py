"""The fuzzing study's table: ``fuzz_trials``, one row per finished trial (Shriver 2018 §4.2)."""

from __future__ import annotations

import pandas as pd

from recaudit.experiment import Store, StudyInfo, Table, columns, register

__all__ = ["FUZZ_TRIALS", "STUDY", "read_trials"]

FUZZ_TRIALS = Table("fuzz_trials", columns(
    "trial_id VARCHAR, dataset VARCHAR, model VARCHAR, heuristic VARCHAR, spec VARCHAR, "
    "kind VARCHAR, size BIGINT, set_index BIGINT, seed BIGINT, k BIGINT, "
    "n_modifications BIGINT, n_ratings BIGINT, n_users BIGINT, gen_seconds DOUBLE, "
    "fit_seconds DOUBLE, f VARCHAR, aod DOUBLE, jaccard DOUBLE, topout DOUBLE, delta DOUBLE, "
    "stable_aod BOOLEAN, stable_jaccard BOOLEAN, stable_topout BOOLEAN, record JSON, "
    "trial JSON, data_fingerprint VARCHAR, finished DOUBLE", {
        "trial_id": "hash of the trial's spec and the data fingerprint",
        "dataset": "the dataset's label: its name, or `name:path` for a file",
        "model": "the model's label, `name(k=v,...)` with its parameters",
        "heuristic": "the fuzzing heuristic (Shriver 2018 Table 4.4, e.g. `AMR`, or "
                     "`APORTFOLIO`)",
        "spec": "the heuristic's canonical perturbation name, "
                "`fuzz:<HEURISTIC>:<size>[:key=...]`",
        "kind": "the modification type: `add`, `remove`, `change`, `mixed` (a portfolio of "
                "several), or `none` (ZERO)",
        "size": "modifications asked for per set (M)",
        "set_index": "which modification set of the (model, heuristic, size) cell, 0 .. "
                     "sets-1",
        "seed": "training seed of both models (and of the set's random generator)",
        "k": "length of the compared top-k lists",
        "n_modifications": "modifications the set actually made",
        "n_ratings": "ratings in the unmodified log (|D|)",
        "n_users": "users whose top-k lists were compared",
        "gen_seconds": "CPU seconds (of the worker process, all its threads) spent generating "
                       "and applying the modification set: a pause or a busy machine does "
                       "not inflate them",
        "fit_seconds": "CPU seconds (of the worker process) spent retraining the model on "
                       "the modified log and ranking",
        "f": "the aggregate of per-user distances: `avg`, `min`, `max` or `median`",
        "aod": "average overlap distance (Shriver 2018 eq. 4.11) between the top-k lists "
               "before and after, aggregated over users with `f`",
        "jaccard": "Jaccard distance, 1 - Jaccard similarity, between the top-k sets before "
                   "and after, aggregated over users with `f`",
        "topout": "TopOut (eq. 4.13: 1 when a user's original top item left the new top k) "
                  "aggregated over users with `f` (with `avg`: the share of such users)",
        "delta": "the oracle's threshold, 100 size / n_ratings (a fraction, not percent)",
        "stable_aod": "true when `aod` < `delta`",
        "stable_jaccard": "true when `jaccard` < `delta`",
        "stable_topout": "true when `topout` < `delta`",
        "record": "the modification set as JSON: each modification (kind, user, item, new "
                  "and old rating, in codes and the data's own ids) and why it was chosen",
        "trial": "the trial's canonical spec as JSON (dataset, model, spec, set index, seed, "
                 "k, f)",
        "data_fingerprint": "SHA-256 of the unmodified ratings log",
        "finished": "when the trial finished, in seconds since the Unix epoch"}),
    key=("trial_id",),
    doc="One finished fuzzing trial: a model retrained on one modification set and the "
        "oracles' distances between its top-k lists before and after.")

register(FUZZ_TRIALS)


def read_trials(store: Store) -> pd.DataFrame:
    """The fuzzing trials of ``store``, by model, heuristic, size and set."""
    return store.read(FUZZ_TRIALS, order=("model", "heuristic", "size", "set_index"))


def _summary(store: Store) -> pd.DataFrame:
    return read_trials(store).drop(columns=["record", "trial"])


def _decisions(store: Store) -> pd.DataFrame:
    """Per (model, size, heuristic): mean TopOut over the sets with its interval, Welch's
    test against the random baseline (Shriver 2018 Tables 4.6-4.8)."""
    from recaudit.fuzz._tables import significance

    return significance(read_trials(store))


#: Fuzzing, as the readers of a store see it (``recaudit status / results / report``).
STUDY = StudyInfo("fuzz", "fuzzing study", (FUZZ_TRIALS,),
                  breakdown=("model", "heuristic", "size"), summary=_summary,
                  decisions=_decisions)
