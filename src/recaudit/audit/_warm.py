"""A warm-started retrain's trial (``remove-last-<window>+warm``): which side is which.

A retrain trial (``remove-last-7d``) compares

- *perturbed*: the **stale** model, trained (seed ``s``) on the training log without its last
  window ``D``, with
- *baseline*: **today's retrain from scratch**, trained (seed ``s``) on the whole log (the
  audit's shared baseline),

so its similarity is the churn a from-scratch retrain brings to a stale model's users.

Its warm twin (``remove-last-7d+warm``, :attr:`recaudit.perturb.Needs.warm`) keeps the same
perturbed side — the stale model, the same fit (a kept fit is shared bit for bit,
``executor.keep_fits``) — and replaces the baseline side with

- **the stale model fine-tuned on the window**: its weights continued on the window's
  interactions only (their contexts from the whole log), ``warm_epochs`` epochs at
  ``warm_lr``, seed ``s`` (:meth:`recaudit.models.SupportsWarmStart.warm_start`).

Both trials then answer "how far do the lists of the updated model lie from the stale model's
lists?", one for each way of updating, on the same queries and seeds: paired per (seed,
query), ``compare_perturbations(store, "remove-last-7d+warm", "remove-last-7d")`` decides
whether fine-tuning churns less than retraining from scratch (``greater``: a higher RBO, less
churn), per window slice too (:func:`recaudit.audit.slices` ``by="window"``). The accuracy
each way of updating buys is the trial's ``mrr_base`` (the updated model's) against the
stale ``mrr_pert``; the two trials' ``mrr_base`` compared give what warm start costs in
accuracy against a retrain from scratch (``mrr_change`` is stale minus updated on both).

The trial's ``fit_seconds`` count the stale fit and the warm start; it trains no shared
baseline.
"""

from __future__ import annotations

import time
from typing import Any

from recaudit import _progress as progress
from recaudit.audit._spec import TrialSpec, build_model
from recaudit.data import RankLists, Split
from recaudit.errors import ConfigError
from recaudit.models import checked_rank, warm_startable
from recaudit.perturb import Perturbation

__all__ = ["warm_lists", "check_warm"]


def check_warm(model: Any, label: str, perturbation: str) -> None:
    """A :class:`ConfigError` unless ``model`` declares a warm start (before the first fit)."""
    if not warm_startable(model):
        raise ConfigError(f"{perturbation} fine-tunes the stale model on the window (a warm "
                          f"start), which model {label} does not declare",
                          hint="warm starts: lstm, gru4rec, sasrec, tisasrec (not stabilised), "
                               "or a model with a warm_start method "
                               "(recaudit.models.SupportsWarmStart); or use the "
                               "from-scratch retrain alone, without '+warm'")


def warm_lists(trial: TrialSpec, spec: Perturbation, split: Split, stale: Any, record: Any,
               seed: int) -> tuple[RankLists, float, float]:
    """The lists of ``stale`` (the trial's fitted perturbed model) warm-started on the window
    its ``record`` removed, with the spec's ``warm_epochs`` and ``warm_lr``, and the warm
    start's and the ranking's seconds."""
    progress.report(phase="warm start")
    model = build_model(trial.model)
    check_warm(model, trial.model.label, getattr(spec, "name", str(spec)))
    t0 = time.perf_counter()
    model.warm_start(stale, split.train, new_from=int(record.cut), seed=seed,
                     epochs=int(getattr(spec, "warm_epochs", 1)),
                     lr=getattr(spec, "warm_lr", None))
    fit_s = time.perf_counter() - t0
    progress.report(phase="warm ranking")
    t1 = time.perf_counter()
    lists = checked_rank(model, split.queries, k=trial.metrics.depth)
    return lists, fit_s, time.perf_counter() - t1
