"""Differential stability oracles (Shriver 2018 §4.1.3, eqs. 4.10-4.13, §4.2.1.4).

An oracle compares every user's top-k list before (``rank``) and after (``rank'``) the
modifications with a distance ``d`` and passes when ``f{d(rank_u, rank'_u) | u ∈ U} < δ``
(eq. 4.10; ``f = avg`` by default). Distances (the batch forms of :mod:`recaudit.metrics`):

- ``aod``: ``1 - (1/k) Σ_{d=1..k} |top-d ∩ top'-d| / d`` (eq. 4.11);
- ``jaccard``: ``1 - |R ∩ R'| / |R ∪ R'|`` -- the *distance*; eq. 4.12 as printed,
  ``1 - (|∪| - |∩|)/|∪|``, simplifies to the similarity ``|∩|/|∪|``, which would call two
  identical lists maximally distant, so the printed form is taken as a typo;
- ``topout``: 1 if the original top item left the new top-k, else 0 (eq. 4.13).

Default threshold (§4.2.1.4): ``δ = 100 * M / |D|`` with ``M`` the size of the modification set
and ``|D|`` the number of ratings, in the units of the distances (fractions in [0, 1], *not*
percent): the thesis' 1, 10, 100 modifications of the 100,000-rating MovieLens 100k give
δ = 0.001, 0.01, 0.1 ("100 modifications is 0.1 % of the dataset, so no more than 10 % of users
should have their top item fall out").
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from recaudit import metrics as M

__all__ = ["DISTANCES", "AGGREGATES", "distances", "default_delta", "Oracle", "Verdict"]

#: The oracles' distances (the ``fuzz_trials`` columns of the same names).
DISTANCES = ("aod", "jaccard", "topout")
Aggregate = Literal["avg", "min", "max", "median"]
AGGREGATES: dict[str, Callable[[np.ndarray], Any]] = {"avg": np.mean, "min": np.min,
                                                      "max": np.max, "median": np.median}


def distances(before: np.ndarray, after: np.ndarray, metric: str = "topout", k: int = 10
              ) -> np.ndarray:
    """Per-user distance between row-aligned top-k lists ``before`` and ``after``
    (``int`` ``[n_users, >= k]``, best first); ``float64[n_users]``."""
    if metric not in DISTANCES:
        raise ValueError(f"unknown distance {metric!r}; use one of {DISTANCES}")
    a, b = np.asarray(before), np.asarray(after)
    if a.ndim != 2 or b.ndim != 2 or a.shape[0] != b.shape[0]:
        raise ValueError(f"before and after must be 2-D with the same rows, got {a.shape} "
                         f"and {b.shape}")
    if a.shape[0] == 0:
        return np.zeros(0)
    if metric == "aod":
        return M.aod_batch(a, b, k=k)
    if metric == "jaccard":
        return 1.0 - M.jaccard_batch(a, b, k=k)
    return M.topout_batch(a, b, k=k)


def default_delta(size: int, n_ratings: int) -> float:
    """``δ = 100 * size / n_ratings`` (§4.2.1.4), a fraction in the distances' units."""
    if n_ratings <= 0:
        raise ValueError(f"n_ratings must be > 0, got {n_ratings}")
    if size < 0:
        raise ValueError(f"size must be >= 0, got {size}")
    return 100.0 * size / n_ratings


@dataclass(frozen=True)
class Verdict:
    """An oracle's outcome: aggregated distance ``value``, threshold ``delta`` and ``stable``
    (``value < delta``, eq. 4.10)."""

    metric: str
    value: float
    delta: float
    stable: bool


@dataclass(frozen=True)
class Oracle:
    """``f{d(rank_u, rank'_u)} < δ`` for one distance ``metric`` at cut-off ``k``."""

    metric: str = "topout"
    k: int = 10
    f: str = "avg"
    delta: float | None = None

    def __post_init__(self) -> None:
        if self.metric not in DISTANCES:
            raise ValueError(f"unknown distance {self.metric!r}; use one of {DISTANCES}")
        if self.f not in AGGREGATES:
            raise ValueError(f"unknown aggregate f={self.f!r}; use one of {sorted(AGGREGATES)}")
        if self.k < 1:
            raise ValueError(f"k must be >= 1, got {self.k}")

    def judge(self, per_user: np.ndarray, *, size: int | None = None,
              n_ratings: int | None = None) -> Verdict:
        """Verdict from per-user distances. Without a fixed ``delta`` the threshold is
        :func:`default_delta` of ``size`` (the configuration's ``M``) and ``n_ratings``."""
        value = float(AGGREGATES[self.f](per_user)) if len(per_user) else 0.0
        if self.delta is None:
            if size is None or n_ratings is None:
                raise ValueError("this oracle has no fixed delta: pass size= and n_ratings= "
                                 "for the default delta = 100 * size / n_ratings")
            delta = default_delta(size, n_ratings)
        else:
            delta = float(self.delta)
        return Verdict(self.metric, value, delta, value < delta)

    def __call__(self, before: np.ndarray, after: np.ndarray, *, size: int | None = None,
                 n_ratings: int | None = None) -> Verdict:
        return self.judge(distances(before, after, self.metric, self.k), size=size,
                          n_ratings=n_ratings)
