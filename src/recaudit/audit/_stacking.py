"""Several trials of one baseline group trained as one stack (``executor.stack``).

:func:`run_stack` prepares each trial as :func:`recaudit.audit.run_trial` does (its baseline,
its perturbed training log), trains the perturbed models together with
:func:`recaudit.models.sequential.fit_stack` when they can share a stack (one sequential model
configuration, not stabilised), then ranks and compares each one on its own. A stacked model
is bit for bit the model trained alone on the CPU, so each outcome is the trial's own; only its
``fit_seconds`` (its share of the stack's training) and its ``versions`` (the stack's size)
tell that it was stacked. A ``+warm`` retrain's stale model trains in the stack like any
perturbed model; its warm start then runs alone (:mod:`recaudit.audit._warm`), and replaces the
trial's baseline side.
"""

from __future__ import annotations

import dataclasses
import os
import time
from collections.abc import Sequence
from typing import Any

from recaudit import _progress as progress
from recaudit.audit._baselines import Baseline, _fit_rank, _local
from recaudit.audit._runner import TrialOutcome, _outcome, _prepare, warm_trial
from recaudit.audit._spec import TrialSpec, build_model
from recaudit.audit._warm import warm_lists
from recaudit.models import checked_rank
from recaudit.perturb import Perturbation

__all__ = ["run_stack"]


def run_stack(trials: Sequence[TrialSpec], perturbations: Sequence[Perturbation | None], *,
              audit: str = "audit", cache_dir: str | os.PathLike | None = None,
              baseline: Baseline | None = None, charges: Sequence[bool] | None = None
              ) -> list[TrialOutcome]:
    """Run several trials of one baseline group, training their perturbed models together as
    one stack (:func:`recaudit.models.sequential.fit_stack`) when they can be: the same
    sequential model configuration, not stabilised. Each outcome is what :func:`run_trial`
    gives for its trial (the same lists and similarities; a stacked model is bit for bit the
    model trained alone on the CPU), except its ``fit_seconds``: its share of the stack's
    training time, and ``versions``, which records the stack's size. ``charges``: whether each
    trial counts the baseline's seconds (:func:`run_trial`'s ``charge_baseline``)."""
    from recaudit.models import scratch_dir

    trials = list(trials)
    charges = [True] * len(trials) if charges is None else list(charges)
    local = _local(cache_dir)
    with scratch_dir(None if local is None else local.parent):
        prepared = []
        for i, (trial, pert, charge) in enumerate(zip(trials, perturbations, charges,
                                                      strict=True)):
            with progress.member(i):
                prepared.append(_prepare(trial, pert, cache_dir=cache_dir, baseline=baseline,
                                         charge_baseline=charge))
        models = _stackable(trials)
        if models is None:
            out = []
            for i, p in enumerate(prepared):
                with progress.member(i):
                    if p.spec.needs.warm:
                        out.append(warm_trial(p.trial, p.spec, audit=audit,
                                              cache_dir=cache_dir))
                        continue
                    lists, fit_s, rank_s, before = _fit_rank(p.trial, p.train, p.split,
                                                             p.seed, local, p.inputs)
                    out.append(_outcome(p, lists, fit_s, rank_s, audit, before=before))
            return out
        from recaudit.models.sequential import fit_stack

        progress.report(phase="perturbed fit")
        t0 = time.perf_counter()
        fit_stack(models, [p.train for p in prepared], [p.seed for p in prepared])
        # a resumed stack adds what it took before (recaudit._resume; a stack split by
        # catalogue: its largest part's)
        carried = max(m.resumed_seconds_ for m in models)
        share = (time.perf_counter() - t0 + carried) / len(models)
        out = []
        for i, (p, model) in enumerate(zip(prepared, models, strict=True)):
            with progress.member(i):
                progress.report(phase="perturbed ranking")
                t1 = time.perf_counter()
                ranks = checked_rank(model, p.split.queries if p.inputs is None else p.inputs,
                                     k=p.trial.metrics.depth)
                rank_s = time.perf_counter() - t1
                if p.spec.needs.warm:  # the stale member, warm-started alone (._warm)
                    base, warm_fit, warm_rank = warm_lists(p.trial, p.spec, p.split, model,
                                                           p.record, p.seed)
                    p = dataclasses.replace(p, base=base, base_fit=warm_fit,
                                            base_rank=warm_rank, carried=0.0)
                out.append(_outcome(p, ranks, share, rank_s, audit, stack=len(models),
                                    before=carried / len(models)))
        return out


def _stackable(trials: list[TrialSpec]) -> list[Any] | None:
    """Fresh models for a stack of ``trials``, or ``None`` when they cannot share one (one
    trial, different model configurations, a stabilised or non-sequential model)."""
    from recaudit.models.sequential import SequentialRecommender

    if len(trials) < 2 or any(t.model != trials[0].model or t.model.stabilise is not None
                              for t in trials):
        return None
    models = [build_model(t.model) for t in trials]
    return models if all(isinstance(m, SequentialRecommender) for m in models) else None
