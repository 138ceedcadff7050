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
    "trial JSON, data_fingerprint VARCHAR, finished DOUBLE"), key=("trial_id",))

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
