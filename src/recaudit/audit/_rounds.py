"""Audits that run until decided: rounds of seeds (or draws) given only to what is undecided.

:func:`run_until_decided` runs an audit as a sequence of *rounds* into one store:

1. a first round trains every perturbation at the plan's first look at or above the
   configured seeds (:mod:`recaudit.stats._sequential`: 3, 4, 6, 8, 12, ..., and the cap);
2. after each round every comparison of the run is tested with the sequential rule
   (:func:`recaudit.stats.sequential_family`: repeated p-values, Holm over all of them, so
   the family-wise error rate stays at ``alpha`` however many rounds run). The comparisons
   (:func:`comparisons`, :func:`model_comparisons`): per model, each perturbation against
   each noise floor the audit has (``seed-only``, ``rerun``), else every pair of
   perturbations, and the ``pairs`` asked for; with several models, per perturbation (the
   ``rerun`` floor aside: it says whether training is reproducible, not how stable the
   lists are) each pair of models — which one is more stable, the question
   :func:`recaudit.audit.compare_models` reads once. All on the per-query similarity ``on``
   (RBO), paired per (seed, query), a seed's draws averaged (two models' seeds are
   independent: pairing seed ``s`` of one with seed ``s`` of the other is arbitrary but
   valid, the replicates' level carrying both models' seed-to-seed variation);
3. a comparison still undecided and not stopped asks for its ``next`` look: under the default
   design the next look, unless it stopped for futility (the cap would not decide the
   differences it still allows) or reached the cap; under the ladder's rules of earlier runs
   the next rung, while its projection fits the cap. Each perturbation is trained, for every
   model, up to the largest look its comparisons ask for (a model comparison asks for its
   perturbation), and the others wait;
4. the run stops when every comparison is decided, stopped for futility or at the cap (the
   ladder's rules: "would need about N seeds"), or when the next round would not finish
   within the budget — and says which (:data:`recaudit.stats.STOPPED`).

``grow="draws"`` grows the perturbation draws of each seed instead (the replicate is then the
draw, its value the mean over the seeds): comparisons with a floor, which draws nothing, are
left out. A round is an ordinary audit run, so a stopped run resumes, and a later call goes
on where this one stopped: the decisions are pure functions of the store and the plan, whose
rule and design cap are the first call's (:class:`SequentialPlan`; the default design's cap
is its last look, so a later call with a larger cap keeps the first and says so; the ladder's
rules go on past it on their tail of alpha). The
rounds run are kept in the store's ``meta`` (``rounds``, with that design and the config each
call was given: a later plain call, more seeds say, leaves the decisions as they were). An
audit with nothing to compare (one model, and one perturbation or floors alone) is refused.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from recaudit.audit._spec import AuditConfig, perturbation_label
from recaudit.stats import (LEGACY_RULE, Sequential, SequentialPlan, replicates_estimator,
                            sequential_family, stopped)

__all__ = ["Rounds", "run_until_decided", "decisions", "comparisons", "model_comparisons",
           "decisions_of_rounds", "comparison_name", "nothing_to_decide"]

#: the columns of :attr:`Rounds.decisions`. ``kind``: ``perturbations`` (``a`` and ``b``
#: perturbations of ``model``; ``perturbation`` empty) or ``models`` (``a`` and ``b`` models
#: under ``perturbation``; ``model`` empty).
COLUMNS = ("dataset", "kind", "model", "perturbation", "a", "b", "decision", "difference",
           "low", "high", "look", "level", "need", "next", "status", "reason")


@dataclass(frozen=True)
class Rounds:
    """What :func:`run_until_decided` did: ``decisions`` (one row per comparison, the
    columns of :data:`COLUMNS`), ``rounds`` (what each round trained: ``round``, ``targets``
    — replicates per perturbation —, ``seconds``, ``decided``, ``open``), ``stopped``
    (``decided``, ``futility``, ``beyond cap``, ``cap``, ``budget``: :data:`~recaudit.stats.STOPPED`)
    and the ``store``."""

    decisions: pd.DataFrame
    rounds: list[dict]
    stopped: str
    store: Path


def comparisons(perturbations: Sequence[str], pairs: Sequence[tuple[str, str]] = (),
                grow: str = "seeds") -> list[tuple[str, str]]:
    """The comparisons of an audit's ``perturbations`` (labels): each against each floor
    present; without a floor, every pair; then ``pairs``; growing draws, those without a
    floor only."""
    from recaudit.audit._decide import FLOORS

    floors = [p for p in perturbations if p in FLOORS]
    others = [p for p in perturbations if p not in FLOORS]
    out = [(p, f) for p in others for f in floors] if floors else \
        [(a, b) for i, a in enumerate(others) for b in others[i + 1:]]
    for a, b in pairs:
        if (a, b) not in out and (b, a) not in out:
            out.append((a, b))
    if grow == "draws":
        out = [(a, b) for a, b in out if a not in FLOORS and b not in FLOORS]
    return out


def model_comparisons(models: Sequence[str], perturbations: Sequence[str],
                      grow: str = "seeds") -> list[tuple[str, str, str]]:
    """The model comparisons of an audit: ``(perturbation, model a, model b)`` for every
    pair of ``models`` (labels, in order) under every perturbation (labels) but the
    ``rerun`` floor; growing draws, those without a floor only (module docstring). None
    with one model."""
    from recaudit.audit._decide import FLOORS, floor_of

    kept = [p for p in perturbations if floor_of(p) != "rerun"
            and (grow == "seeds" or p not in FLOORS)]
    return [(p, a, b) for p in kept for i, a in enumerate(models) for b in models[i + 1:]]


def nothing_to_decide(config: AuditConfig, pairs: Sequence[tuple[str, str]] = (),
                      grow: str = "seeds") -> str | None:
    """Why ``config`` has no comparison to decide (one line), or None when it has one."""
    labels = [perturbation_label(p) for p in config.perturbations]
    models = [m.label for m in config.models]
    if comparisons(labels, pairs, grow) or model_comparisons(models, labels, grow):
        return None
    held = (f"{len(models)} models" if len(models) > 1 else "one model") + \
        f" and {', '.join(labels)}"
    return (f"nothing to decide: {held} give no comparison (a perturbation against a noise "
            "floor, two perturbations, or two models under one perturbation"
            + ("; growing draws, comparisons with a floor, which draws nothing, are left out)"
               if grow == "draws" else ")"))


def comparison_name(row: Any, several: bool = True) -> str:
    """A row of :attr:`Rounds.decisions` in words: ``random-delete vs seed-only`` (with
    ``(model)`` where the audit has ``several`` models), ``gru4rec vs sasrec under
    random-delete`` for a model comparison."""
    if row.kind == "models":
        return f"{row.a} vs {row.b} under {row.perturbation}"
    return f"{row.a} vs {row.b}" + (f" ({row.model})" if several else "")


def _paired(ga: pd.DataFrame, gb: pd.DataFrame, on: str, grow: str
            ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(differences ``a - b``, replicates, queries) of the per-query values ``ga`` and
    ``gb``: per (replicate, query) means, the replicate being the seed (``grow="seeds"``)
    or the draw."""
    from recaudit.audit._decide import _values

    key = "seed" if grow == "seeds" else "draw"
    sides = []
    for g in (ga, gb):
        sides.append(g.assign(v=_values(g, on)).groupby([key, "query"], as_index=False)["v"]
                     .mean())
    both = sides[0].merge(sides[1], on=[key, "query"], suffixes=("_a", "_b"))
    return ((both["v_a"] - both["v_b"]).to_numpy(float), both[key].to_numpy(np.int64),
            both["query"].to_numpy(np.int64))


def decisions(store: Any, config: AuditConfig, plan: SequentialPlan, *,
              pairs: Sequence[tuple[str, str]] = (), on: str = "rbo", grow: str = "seeds"
              ) -> tuple[pd.DataFrame, dict[tuple[str, str, str, str, str], Sequential]]:
    """Every comparison of ``config`` decided on what ``store`` holds (module docstring):
    a frame of :data:`COLUMNS` and the :class:`~recaudit.stats.Sequential` of each, keyed by
    (dataset, model, perturbation, a, b) as in the frame; the whole run is one family (Holm
    over its comparisons, those of the models included). The frame's ``low`` and ``high``
    are clipped to the difference's feasible range ([-1, 1] for two similarities:
    :func:`recaudit.audit._decide.difference_range`); the :class:`Sequential` keeps the
    interval as the rule computed it."""
    from recaudit.audit._decide import _groups, difference_range
    from recaudit.experiment import Store

    labels = [perturbation_label(p) for p in config.perturbations]
    pairs_of = comparisons(labels, pairs, grow)
    models = [m.label for m in config.models]
    across = model_comparisons(models, labels, grow)
    held = isinstance(store, Store) or Path(store).exists()
    groups = {(m, d): q for d, m, q in _groups(store, [on])} if held else {}
    empty = pd.DataFrame(columns=["perturbation", "seed", "draw", "query", on])
    keys, items = [], []

    def add(key: tuple[str, str, str, str, str], ga: pd.DataFrame, gb: pd.DataFrame) -> None:
        d, r, u = _paired(ga, gb, on, grow) if len(ga) and len(gb) else (
            np.empty(0), np.empty(0, np.int64), np.empty(0, np.int64))
        keys.append(key)
        items.append(replicates_estimator(d, r, u))

    for dataset in config.datasets:
        of = {model: next((v for (m, d), v in groups.items() if m == model and (
            d == dataset.label or d.startswith(f"{dataset.label} ["))), empty)
            for model in models}
        for model in models:
            q = of[model]
            for a, b in pairs_of:
                add((dataset.label, model, "", a, b), q[q.perturbation == a],
                    q[q.perturbation == b])
        for pert, a, b in across:
            qa, qb = of[a], of[b]
            add((dataset.label, "", pert, a, b), qa[qa.perturbation == pert],
                qb[qb.perturbation == pert])
    bounds = difference_range(on)
    rows, found = [], {}
    for key, s in zip(keys, sequential_family(items, plan)):
        found[key] = s
        label, model, pert, a, b = key
        rows.append({"dataset": label, "kind": "models" if pert else "perturbations",
                     "model": model, "perturbation": pert, "a": a, "b": b,
                     "decision": s.decision, "difference": s.difference,
                     "low": max(s.low, bounds[0]), "high": min(s.high, bounds[1]),
                     "look": s.look, "level": s.level,
                     "need": s.need, "next": s.next, "status": s.status,
                     "reason": s.reason()})
    return pd.DataFrame(rows, columns=list(COLUMNS)), found


def with_replicates(config: AuditConfig, grow: str, n: int) -> AuditConfig:
    """``config`` with ``n`` seeds (the configured ones, then the next integers) or ``n``
    draws."""
    if grow == "draws":
        return dataclasses.replace(config, draws=n)
    seeds = list(config.seeds)
    nxt = max(seeds) + 1 if seeds else 0
    while len(seeds) < n:
        seeds.append(nxt)
        nxt += 1
    return dataclasses.replace(config, seeds=tuple(seeds[:n]))


def first_round(config: AuditConfig, plan: SequentialPlan, grow: str = "seeds") -> int:
    """The replicates of the first round: the first look of the plan at or above the
    configured seeds (or draws), at most its last look."""
    have = len(config.seeds) if grow == "seeds" else config.draws
    return plan.first(have)


def _median_trial_seconds(store: Path) -> float | None:
    from recaudit.audit._analysis import trial_summary

    if not store.exists():
        return None
    t = trial_summary(store)["total_seconds"].dropna()
    return float(t.median()) if len(t) else None


def run_until_decided(config: AuditConfig, plan: SequentialPlan, *,
                      pairs: Sequence[tuple[str, str]] = (), on: str = "rbo",
                      grow: str = "seeds", budget: float | None = None,
                      progress: Callable[[str], None] | None = None,
                      run: Callable[[AuditConfig], Path] | None = None) -> Rounds:
    """Run ``config`` in rounds until its comparisons are decided (module docstring).

    plan: alpha, margin (in ``on``'s units) and cap (seeds, or draws). budget: seconds this
    call may spend (a round that would not finish in what is left is not started; a round
    started finishes). run: how a round runs (default :func:`recaudit.audit.run_audit`; the
    command line passes its progress-bar runner)."""
    from recaudit.audit._study import run_audit

    if grow not in ("seeds", "draws"):
        raise ValueError(f"grow must be 'seeds' or 'draws', got {grow!r}")
    why = nothing_to_decide(config, pairs, grow)
    if why is not None:
        from recaudit.errors import ConfigError

        raise ConfigError(f"--until-decided: {why}", hint="add the seed-only floor (-p "
                          "seed-only), another perturbation or another --model; or run "
                          "without --until-decided")
    say = progress or (lambda message: None)
    runner = run or run_audit
    started = time.perf_counter()
    store = Path(config.output)
    labels = {perturbation_label(p): p for p in config.perturbations}
    earlier = _kept(store)
    call = max((r.get("call", 0) for r in earlier), default=0) + 1
    # the spending was designed for the first call's cap and rule: a later call keeps both
    # (rounds that name no rule were run before rules were named: LEGACY_RULE)
    design = next((r["design"] for r in earlier if r.get("design")), plan.design or plan.cap)
    rule = next((r["plan"].get("rule", LEGACY_RULE) for r in earlier if r.get("plan")),
                plan.rule)
    plan = dataclasses.replace(plan, design=design, rule=rule)
    if plan.calibrated and plan.cap > design:  # its alpha is spent at the design's cap
        say(f"the design of this store's first run ends at {design} {grow}: the cap stays "
            f"{design}")
        plan = dataclasses.replace(plan, cap=design)
    first = first_round(config, plan, grow)
    targets = {label: first for label in labels}
    history: list[dict] = []
    while True:
        todo = dict(targets)
        by_n: dict[int, list[str]] = {}
        for label, n in todo.items():
            by_n.setdefault(n, []).append(label)
        median = _median_trial_seconds(store)
        if budget is not None and median is not None and history:
            new = sum(max(0, n - history[-1]["targets"].get(label, 0)) for label, n in
                      todo.items())
            left = budget - (time.perf_counter() - started)
            if new * median / max(1, config.executor.workers) > left:
                frame, _ = decisions(store, config, plan, pairs=pairs, on=on, grow=grow)
                return Rounds(frame, history, "budget", store)
        t0 = time.perf_counter()
        say(f"round {len(history) + 1}: " + ", ".join(
            f"{', '.join(names)} to {n} {grow}" for n, names in sorted(by_n.items())))
        for n, names in sorted(by_n.items()):
            part = dataclasses.replace(with_replicates(config, grow, n),
                                       perturbations=tuple(labels[x] for x in names))
            runner(part)
        frame, found = decisions(store, config, plan, pairs=pairs, on=on, grow=grow)
        history.append({"call": call, "design": design, "round": len(history) + 1,
                        "config": config.to_dict(),
                        "plan": {"alpha": plan.alpha, "cap": plan.cap, "margin": plan.margin,
                                 "rule": plan.rule, "futility": plan.futility,
                                 "detect": plan.detect,
                                 "grow": grow, "on": on, "pairs": [list(p) for p in pairs]},
                        "targets": dict(todo),
                        "seconds": time.perf_counter() - t0,
                        "decided": int((frame.status == "decided").sum()),
                        "open": int((frame.status == "running").sum())})
        _keep(store, earlier + history)
        grown = dict(targets)
        for (_, _, pert, a, b), s in found.items():
            if s.next is not None:
                for label in (pert,) if pert else (a, b):
                    grown[label] = max(grown[label], s.next)
        if grown == targets:
            return Rounds(frame, history, stopped(list(found.values())) or "cap", store)
        targets = grown


def _kept(store: Path) -> list[dict]:
    """The rounds earlier calls kept in the store's ``meta`` (``rounds``)."""
    from recaudit.experiment import Store

    if not store.exists():
        return []
    with Store(store, read_only=True) as s:
        return list(s.meta().get("rounds", []))


def _keep(store: Path, rounds: list[dict]) -> None:
    """Every call's rounds, in the store's ``meta`` (key ``rounds``; ``call`` numbers the
    invocations of :func:`run_until_decided` on the store)."""
    from recaudit.experiment import Store

    with Store(store) as s:
        s.set_meta("rounds", rounds)


def decisions_of_rounds(store: Any, config_of: Callable[[dict], AuditConfig]):
    """The decisions of the last ``--until-decided`` run kept in ``store`` (its ``rounds``
    and the config that run was given — the store's where the rounds kept none —, read with
    ``config_of``), as ``(frame, plan, rounds)``; None when the store was not run until
    decided."""
    from recaudit.experiment import Store

    if isinstance(store, Store):
        meta = store.meta()
    else:
        with Store(store, read_only=True) as s:
            meta = s.meta()
    rounds = [r for r in meta.get("rounds", []) if r.get("plan")]
    if not rounds or not (rounds[-1].get("config") or meta.get("config")):
        return None
    last = rounds[-1]
    p = last["plan"]
    plan = SequentialPlan(alpha=p["alpha"], cap=p["cap"], margin=p["margin"],
                          design=last.get("design"), rule=p.get("rule", LEGACY_RULE),
                          futility=p.get("futility", True), detect=p.get("detect"))
    config = config_of(last.get("config") or meta["config"])
    frame, _ = decisions(store, config, plan, pairs=[tuple(x) for x in p.get("pairs", [])],
                         on=p.get("on", "rbo"), grow=p.get("grow", "seeds"))
    return frame, plan, [r for r in rounds if r["call"] == last["call"]]
