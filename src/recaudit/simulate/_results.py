"""MIRROR result rows: their shape, their summary over seeds, and their table in a store.

A result is a long-format row ``(scenario, algorithm, mix, seed, round, metric, value)``;
oracle rows have ``mix = None`` and rows that are not per-round have ``round = None``. Stored in
the results store's ``mirror_results`` table, where a run replaces the rows of the same
(scenario, algorithm, mix, seed).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

__all__ = ["result_row", "summarise", "write_results", "RESULT_KEY"]

#: The columns a new run's rows replace stored rows by.
RESULT_KEY = ("scenario", "algorithm", "mix", "seed")


def result_row(scenario: str, algo: str, mix: float | None, seed: int, metric: str,
               value: float, rnd: int | None = None) -> dict[str, Any]:
    """One result row (see the module docstring)."""
    return {"scenario": scenario, "algorithm": algo, "mix": mix, "seed": int(seed),
            "round": rnd, "metric": metric, "value": float(value)}


def summarise(rows: Sequence[dict]) -> Any:
    """Mean and standard deviation over seeds per (scenario, algorithm, mix, round, metric)."""
    import pandas as pd

    df = pd.DataFrame(list(rows))
    keys = ["scenario", "algorithm", "mix", "round", "metric"]
    return (df.groupby(keys, dropna=False, sort=False)["value"]
            .agg(["mean", "std", "count"]).reset_index())


def write_results(rows: Iterable[dict], path: str | Path) -> int:
    """Store ``rows`` in the results store at ``path`` (table ``mirror_results``), replacing
    rows of the same (scenario, algorithm, mix, seed). Returns the number written."""
    import pandas as pd

    from recaudit.experiment import Store

    df = pd.DataFrame(list(rows), columns=["scenario", "algorithm", "mix", "seed", "round",
                                           "metric", "value"])
    with Store(path) as store:
        return store.replace_rows("mirror_results", df, RESULT_KEY)
