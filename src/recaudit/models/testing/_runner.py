"""Run the conformance kit on one model and collect a pass/fail report.

:func:`run_conformance` is what ``recaudit models check MODEL`` prints: each check of
:mod:`recaudit.models.testing` on a small planted-pattern log with ratings (so that
sequential, rating-based and command models can all be checked), timed, with its outcome:

- ``pass``;
- ``FAIL`` -- the model breaks a property every audited model needs (an ``AssertionError``
  from the check, a :class:`~recaudit.errors.ModelError` -- ``rank`` returned no
  ``RankLists``, ``fit`` not the model -- or any other exception the model raised);
- ``warn`` -- a property that some models legitimately lack: a seed that changes nothing
  (closed-form models such as kNN) or no gain over popularity on the planted pattern
  (a model that ignores sequence order).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from recaudit.data import Interactions
from recaudit.errors import RecauditError
from recaudit.models import checked_fit, checked_rank
from recaudit.models.testing import _checks as T

__all__ = ["CheckResult", "CHECKS", "conformance_log", "run_conformance"]


@dataclass(frozen=True)
class CheckResult:
    name: str
    description: str
    status: str  # "pass", "FAIL" or "warn"
    seconds: float
    detail: str = ""


def _shapes(make, train, queries):
    T.check_rank_shapes(checked_fit(make(), train, seed=0), train, queries)


def _topk(make, train, queries):
    T.check_topk_consistent(checked_fit(make(), train, seed=0), queries)


def _learns(make, train, queries):
    mrr = T.next_item_mrr(checked_rank(checked_fit(make(), train, seed=0), queries),
                          queries.target)
    pop = T.next_item_mrr(T.popularity_ranklists(train, len(queries)), queries.target)
    assert mrr > 1.2 * pop, f"next-item MRR {mrr:.3f} vs popularity {pop:.3f}"


def _params(make, train, queries):
    T.check_params_round_trip(make)


def _unfitted(make, train, queries):
    T.check_unfitted_use(make, queries)


#: (name, what it establishes, check(make, train, queries), status when it does not hold)
CHECKS: tuple[tuple[str, str, Callable, str], ...] = (
    ("shapes", "rows, depth, ids in range, no padding, no repeats, scores non-increasing",
     _shapes, "FAIL"),
    ("top-k", "top-k lists are prefixes of the full lists", _topk, "FAIL"),
    ("determinism", "same data + same seed => bit-identical lists", T.check_determinism, "FAIL"),
    ("one deletion", "deleting one training interaction changes the lists",
     T.check_deletion_changes, "FAIL"),
    ("seed", "another seed changes the lists (closed-form models: no)", T.check_seed_changes,
     "warn"),
    ("inputs", "fit and rank do not modify their inputs", T.check_inputs_not_mutated, "FAIL"),
    ("targets", "ranking never reads the queries' ground truth", T.check_targets_not_read,
     "FAIL"),
    ("independence", "a query's list does not depend on its batch", T.check_query_independence,
     "FAIL"),
    ("global RNG", "numpy's and torch's global random state untouched",
     T.check_global_rng_untouched, "FAIL"),
    ("numpy seed", "fit(seed=np.int64(s)) trains the model fit(seed=s) does",
     T.check_numpy_seed, "FAIL"),
    ("params", "get_params() survives JSON and rebuilds an equal model", _params, "FAIL"),
    ("unfitted", "rank() before fit() is an error that says so", _unfitted, "FAIL"),
    ("pickling", "a pickled fitted model ranks identically (models travel to workers)",
     T.check_pickling, "FAIL"),
    ("learns", "beats popularity on the planted next-item pattern", _learns, "warn"),
)


def conformance_log(n_users: int = 30, n_items: int = 40, length: int = 20,
                    seed: int = 0) -> Interactions:
    """:func:`~recaudit.models.testing.planted_log` with ratings in {0.5, 1, ..., 5}."""
    log = T.planted_log(n_users=n_users, n_items=n_items, length=length, seed=seed)
    rng = np.random.default_rng(seed)
    return log.replace(rating=rng.integers(1, 11, size=len(log)) / 2.0)


def run_conformance(make_model: Callable[[], object], log: Interactions | None = None, *,
                    only: tuple[str, ...] | None = None,
                    progress: Callable[[str], None] | None = None) -> list[CheckResult]:
    """Every check (or those named in ``only``) on ``make_model``; never raises for a
    failing model -- the failure is the result."""
    train, queries = T.leave_last_out(conformance_log() if log is None else log)
    out = []
    for name, what, check, on_fail in CHECKS:
        if only is not None and name not in only:
            continue
        if progress:
            progress(name)
        tic = time.perf_counter()
        try:
            check(make_model, train, queries)
            status, detail = "pass", ""
        except AssertionError as exc:
            status, detail = on_fail, str(exc) or "assertion failed"
        except RecauditError as exc:  # the model breaks the protocol itself (ModelError)
            status, detail = "FAIL", exc.one_line()
        except Exception as exc:  # the model crashed: report it as this check's failure
            status, detail = "FAIL", f"{type(exc).__name__}: {exc}"
        out.append(CheckResult(name, what, status, time.perf_counter() - tic, detail))
    return out
