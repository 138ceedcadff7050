"""What a perturbation reads besides the training log (:class:`recaudit.perturb.Context`), as
the audit runner prepares it from the family's ``needs``: the baseline's lists, the baseline model
refitted with the family's parameters (eagerly, or on demand for a ``lazy_model`` family), a memo
beside the baseline cache, the held-out pairs."""

from __future__ import annotations

import dataclasses
import hashlib
import os
import time
from typing import Any

import numpy as np

from recaudit.audit._spec import TrialSpec, build_model
from recaudit.data import Interactions, RankLists, Split
from recaudit.experiment import ArrayCache, canonical_json
from recaudit.perturb import Context, Perturbation

__all__ = ["perturb_context", "close_context", "cache_key"]


def _fit(trial: TrialSpec, train: Interactions, seed: int, extra: dict[str, Any] | None = None,
         anchor: Any = None) -> tuple[Any, float, float]:
    """The fitted model, the seconds its fit took and, of those, the ones it took before this
    process (a fit resumed from, or taken finished from, its kept state: recaudit._resume),
    which the trial's total time adds."""
    model = build_model(trial.model, **(extra or {}))
    t0 = time.perf_counter()
    try:
        if anchor is not None and getattr(model, "uses_anchor", False):
            model.fit(train, seed=seed, anchor=anchor)
        else:
            model.fit(train, seed=seed)
    except BaseException:  # failed or stopped: a model with files on disk removes them now
        if hasattr(model, "close"):
            model.close()
        raise
    before = float(getattr(model, "resumed_seconds_", 0.0))
    return model, time.perf_counter() - t0 + before, before


def perturb_context(spec: Perturbation, trial: TrialSpec, split: Split,
                    base: RankLists | None, cache: str | os.PathLike | None = None) -> Context:
    """The inputs ``spec.needs`` asks for, and nothing else: the baseline's lists for the test
    queries, the baseline model refitted with the family's extra parameters (deterministic, so
    the same model as the cached baseline; e.g. TracIn's checkpoints do not change training),
    the held-out pairs. For a stabilised model the fitted model is the *plain* one, so a
    model-guided perturbation edits the same interactions for both.

    A family with ``needs.lazy_model`` gets a ``fit`` that refits on demand instead, and, with
    a baseline ``cache``, a ``memo`` keeping what it derives from the model beside the
    baseline's lists (``<baseline key>.<name>.<parameters hash>``, verified like them): a
    TracIn trial whose baseline's scores are kept trains one model, not two. Close the context
    with :func:`close_context`."""
    needs = spec.needs
    model = fit = memo = None
    if needs.model:
        plain = dataclasses.replace(trial, model=trial.model.base)
        params = dict(needs.model_params)
        fit = _LazyFit(plain, split.train, params)
        if not needs.lazy_model:
            model, fit = fit(), None
        elif cache is not None:
            key = cache_key(plain, plain.baseline_key(split.train.fingerprint()))
            memo = _Memo(ArrayCache(cache), f"{key}.", canonical_json(params))
    return Context(queries=split.queries, baseline=base if needs.recommendations else None,
                   k=trial.metrics.k, model=model, fit=fit, memo=memo,
                   protected=split.held_out_pairs() if needs.protected else None)


def cache_key(trial: TrialSpec, baseline_key: str) -> str:
    """The baseline cache's key of ``trial`` (whose baseline key is ``baseline_key``): the
    baseline key and, when its model's arithmetic is not at its first version
    (``implementation``, the sequential models), that version: lists a model computed before
    its numbers changed are never compared with lists it computes now (a store resumed across
    the change trains its baselines again)."""
    from recaudit.models import model_class

    version = getattr(model_class(trial.model.name), "implementation", 1)
    return baseline_key if version == 1 else f"{baseline_key}.v{version}"


def close_context(context: Context) -> None:
    """Release the model a context fitted (models with files on disk remove them)."""
    for model in (context.model, getattr(context.fit, "model", None)):
        if model is not None and hasattr(model, "close"):
            model.close()


class _LazyFit:
    """Fits the plain baseline model with a family's parameters on its first call, once."""

    def __init__(self, trial: TrialSpec, train: Interactions, params: dict[str, Any]) -> None:
        self.trial, self.train, self.params = trial, train, params
        self.model: Any = None

    def __call__(self) -> Any:
        if self.model is None:
            self.model, _, _ = _fit(self.trial, self.train, self.trial.seed, self.params)
        return self.model


class _Memo:
    """``memo(name, compute)`` over an :class:`ArrayCache`: entries ``<prefix><name>.<hash of
    the model's extra parameters>``."""

    def __init__(self, cache: ArrayCache, prefix: str, params: str) -> None:
        self.cache, self.prefix = cache, prefix
        self.suffix = "." + hashlib.sha256(params.encode()).hexdigest()[:12]

    def __call__(self, name: str, compute: Any) -> np.ndarray:
        if not name or not all(c.isalnum() or c in "-_" for c in name):
            raise ValueError(f"memo name {name!r}: use letters, digits, '-' and '_'")
        key = self.prefix + name + self.suffix
        hit = self.cache.get(key)
        if hit is not None:
            return hit["values"]
        values = np.asarray(compute())
        self.cache.put(key, values=values)
        return values
