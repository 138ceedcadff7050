"""MIRROR's results: their rows, their tables in a results store, their summary over seeds.

A result is a long-format row ``(scenario, algorithm, mix, seed, round, metric, value)``;
oracle rows have ``mix = None`` and rows that are not per-round have ``round = None``. Table
``mirror_trials`` holds one row per finished trial of a :class:`~recaudit.simulate.MirrorStudy`
(one seed), ``mirror_results`` its result rows with the trial's id (rows of stores written
before MIRROR was a study have none).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from recaudit.experiment import Store, StudyInfo, Table, columns, register

__all__ = ["MIRROR_TRIALS", "MIRROR_RESULTS", "STUDY", "read_results", "result_row", "summarise",
           "write_results", "RESULT_KEY", "ROW"]

MIRROR_TRIALS = Table("mirror_trials", columns(
    "trial_id VARCHAR, scenario VARCHAR, seed BIGINT, config JSON, n_rows BIGINT, "
    "seconds DOUBLE, finished DOUBLE", {
        "trial_id": "hash of the one-seed configuration",
        "scenario": "`decoy-slate` or `topic-sequential`",
        "seed": "the seed the trial simulated",
        "config": "the trial's MIRROR configuration (one seed) as JSON",
        "n_rows": "result rows the trial wrote to `mirror_results`",
        "seconds": "wall-clock seconds of the simulation",
        "finished": "when the trial finished, in seconds since the Unix epoch"}),
    key=("trial_id",),
    doc="One finished MIRROR trial: every mix ratio and algorithm of one seed.")
MIRROR_RESULTS = Table("mirror_results", columns(
    "scenario VARCHAR, algorithm VARCHAR, mix DOUBLE, seed BIGINT, round BIGINT, "
    "metric VARCHAR, value DOUBLE, trial_id VARCHAR DEFAULT NULL", {
        "scenario": "`decoy-slate` or `topic-sequential`",
        "algorithm": "the learned algorithm (e.g. `DeepFM`, `GRU`) or the oracle policy "
                     "(e.g. `Unbiased Oracle`, `Decoy Oracle`)",
        "mix": "share alpha of manipulative data in the training data, in [0, 1]; NULL for "
               "an oracle's rows",
        "seed": "the seed of the simulation",
        "round": "the interaction round (from 1) of a per-round value; NULL for a value over "
                 "the whole run",
        "metric": "the measure: `ctr`, `fctr`, `mani_score`, `ndcg`, `auc` (slates), or "
                  "`ctr`, `fctr`, `ps` (Preference Shift), `auc` (sequential)",
        "value": "the measure's value",
        "trial_id": "the trial (its row in `mirror_trials`); NULL for rows written before "
                    "MIRROR was a study"}),
    doc="One measurement of a MIRROR run: a metric of one algorithm at one mix ratio and "
        "seed (and round).")
register(MIRROR_TRIALS, MIRROR_RESULTS)

#: The columns a run's rows replace stored rows by.
RESULT_KEY = ("scenario", "algorithm", "mix", "seed")
ROW = ["scenario", "algorithm", "mix", "seed", "round", "metric", "value"]


def result_row(scenario: str, algo: str, mix: float | None, seed: int, metric: str,
               value: float, rnd: int | None = None) -> dict[str, Any]:
    """One result row (see the module docstring)."""
    return {"scenario": scenario, "algorithm": algo, "mix": mix, "seed": int(seed),
            "round": rnd, "metric": metric, "value": float(value)}


def summarise(rows: Sequence[dict] | Any, level: float = 0.95) -> Any:
    """Per (scenario, algorithm, mix, round, metric): ``mean``, ``std`` and ``count`` over
    seeds and the ``level`` interval of the mean (``ci_low``, ``ci_high``: Student's t over
    the seeds, each of which simulates its own users; :func:`recaudit.stats.estimate_mean`).
    With one seed the interval is undefined (NaN), not a zero-width one."""
    import numpy as np
    import pandas as pd

    from recaudit.stats import estimate_mean

    df = rows if isinstance(rows, pd.DataFrame) else pd.DataFrame(list(rows), columns=ROW)
    keys = ["scenario", "algorithm", "mix", "round", "metric"]
    out = (df.groupby(keys, dropna=False, sort=False)["value"]
           .agg(["mean", "std", "count"]).reset_index())
    bounds = [estimate_mean(g["value"].to_numpy(float), np.arange(len(g)),
                            np.zeros(len(g))).interval(level)
              for _, g in df.groupby(keys, dropna=False, sort=False)]
    single = (out["count"] < 2).to_numpy()
    out["ci_low"] = np.where(single, np.nan, [b[0] for b in bounds])
    out["ci_high"] = np.where(single, np.nan, [b[1] for b in bounds])
    return out


def write_results(rows: Iterable[dict], path: str | Path) -> int:
    """Store ``rows`` in the results store at ``path`` (table ``mirror_results``), replacing
    rows of the same (scenario, algorithm, mix, seed). Returns the number written."""
    import pandas as pd

    df = pd.DataFrame(list(rows), columns=ROW)
    with Store(path) as store:
        return store.replace_rows(MIRROR_RESULTS, df, RESULT_KEY)


def read_results(store: Store) -> Any:
    """Every MIRROR result row of ``store``, in the order written."""
    return store.read(MIRROR_RESULTS)


def _summary(store: Store) -> Any:
    """Mean, standard deviation and 95 % interval over the stored seeds of every result."""
    return summarise(read_results(store).drop(columns=["trial_id"]))


#: MIRROR, as the readers of a store see it (``recaudit status / results / report``).
STUDY = StudyInfo("mirror", "MIRROR benchmark", (MIRROR_TRIALS, MIRROR_RESULTS),
                  breakdown=("scenario",), summary=_summary, decisions=_summary)
