"""Data and measures shared by the Chapter 3 experiments of Shriver 2018 (Tables 3.4, 3.6).

The thesis' universe (§3.1) holds every movie of the dataset, rated or not: LightFM ranks
movies nobody rated (Table 3.4, NRTK(min) = 0) and "(no genres listed)" is a genre (LightFM's
IANR, FunkSVD's IANRLCMP). :func:`thesis_log` therefore loads the ratings through the dataset
registry and widens the item code space to the whole of ``movies.csv`` (unrated movies get the
codes after the rated ones, so rated codes are unchanged), with the genres as attributes and
"(no genres listed)" kept as a label (the registry's reader drops it). Release years come from
the ``(YYYY)`` at the end of a title; a title without one has no year and is never excluded.

Measure keys: ``<model>/<property>/value`` (the instantiated threshold; property keys are the
Table 3.4 labels without spaces, e.g. ``NUPRL(max,<=)``), ``.../share`` (normalised, see
:func:`normalise`), ``<model>/IANR/count`` and ``<model>/IANR/has:<genre>`` (1 when the genre is
never recommended, 0 when it is), ``<model>/IANRLCMP/rank:<genre>`` (1 = most recommended genre).
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np


__all__ = ["DATASETS", "MODELS", "thesis_dataset", "thesis_log", "prop_key", "normalise",
           "log_stats", "column_measures"]

#: Table 3.4's columns, in order (created as ``<name>@shriver2018``).
MODELS = ("user-user", "item-item", "funksvd", "slope-one", "lightfm")
#: The dataset of each scale: the thesis' MovieLens 20M at the paper's (registered with its
#: checksum; ``recaudit datasets fetch ml-20m`` where the network allows), ml-latest-small,
#: which stands in for it, at the small one.
DATASETS = {"small": "ml-latest-small", "paper": "ml-20m"}
NO_GENRE = "(no genres listed)"
_YEAR = re.compile(r"\((\d{4})\)\s*$")

#: How each count is normalised (Table 3.6's "normalized the values", §3.5.2; our reading):
#: by the users of the step, by the movies that may be recommended, or by the largest
#: number of ratings of any movie. Ratings (ARTK) and NRANKS (per user, out of k) stay as
#: they are.
_BY = {"NRLMU": "users", "NRL": "users", "NRS": "users", "NUPRL": "users", "NUIR": "users",
       "NRI": "items", "NTRI": "items", "NRTK": "max_item_ratings"}


#: The thesis' universe as a dataset spec (the registry's MovieLens reader with
#: ``catalogue`` and ``no_genre``; see the module docstring).
def thesis_dataset(name: str = "ml-latest-small") -> Any:
    from recaudit.experiment import DatasetSpec

    return DatasetSpec(name, min_user_interactions=0,
                       options={"catalogue": True, "no_genre": NO_GENRE})


def thesis_log(name: str = "ml-latest-small") -> tuple[Any, np.ndarray]:
    """``(log, release_years)``: ratings with the whole ``movies.csv`` catalogue (see the
    module docstring); years per item code, ``NaN`` where the title has none."""
    from recaudit.experiment import load_dataset
    from recaudit.properties import release_years

    spec = thesis_dataset(name)
    log = load_dataset(spec)
    return log, release_years(spec, log)


def prop_key(label: str) -> str:
    """``"NRANKS (min, >=)"`` -> ``"NRANKS(min,>=)"``."""
    return label.replace(" ", "")


def log_stats(log: Any, candidates: np.ndarray | None = None) -> dict[str, float]:
    """Normalisers of one (sub)log: active users, recommendable movies, the largest number
    of ratings of a movie, and the number of ratings."""
    n_items = log.n_items if candidates is None else int(np.count_nonzero(candidates))
    return {"users": float(np.count_nonzero(log.user_counts())), "items": float(n_items),
            "max_item_ratings": float(log.item_counts().max(initial=0)),
            "ratings": float(len(log))}


def normalise(key: str, value: float, stats: dict[str, float]) -> float | None:
    """``value`` divided by its normaliser (``_BY``), or ``None`` when it is left as is."""
    by = _BY.get(key.split("(")[0])
    if by is None:
        return None
    return float(value) / stats[by] if stats[by] else float("nan")


def column_measures(model: str, column: dict[str, Any], stats: dict[str, float]
                    ) -> dict[str, float]:
    """Flat measures of one model's Table 3.4 column (label -> number, list of labels or None)."""
    out: dict[str, float] = {}
    genres = list(column.get("IANRLCMP") or [])  # every genre, most recommended first
    for label, v in column.items():
        key = prop_key(label)
        if key == "IANR":
            never = set(v or [])
            out[f"{model}/IANR/count"] = float(len(never))
            out.update({f"{model}/IANR/has:{g}": float(g in never)
                        for g in sorted(never | set(genres))})
        elif key == "IANRLCMP":
            out.update({f"{model}/IANRLCMP/rank:{g}": float(r)
                        for r, g in enumerate(v or [], start=1)})
        else:
            x = float("nan") if v is None else float(v)
            out[f"{model}/{key}/value"] = x
            share = normalise(key, x, stats)
            if share is not None:
                out[f"{model}/{key}/share"] = share
    return out
