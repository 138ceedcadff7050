"""Audits that run until decided: rounds of seeds (or draws) given only to what is undecided.

:func:`run_until_decided` runs an audit as a sequence of *rounds* into one store:

1. a first round trains every perturbation at the first rung of the ladder at or above the
   configured seeds (:mod:`recaudit.stats._sequential`: 3, 4, 6, 8, 12, ...);
2. after each round every comparison of the run is tested with the sequential rule
   (:func:`recaudit.stats.sequential_family`: repeated p-values, Holm over all of them, so
   the family-wise error rate stays at ``alpha`` however many rounds run): each perturbation against each
   noise floor the audit has (``seed-only``, ``rerun``), else every pair of perturbations, and
   the ``pairs`` asked for — on the per-query similarity ``on`` (RBO), paired per (seed,
   query), a seed's draws averaged;
3. a comparison still undecided whose projected need fits the cap asks for the next rung
   (at most one rung up); each perturbation is trained up to the largest rung its
   comparisons ask for, and the others wait;
4. the run stops when every comparison is decided, when the rest would need more than the cap
   ("would need about N seeds"), or when the next round would not finish within the budget —
   and says which.

``grow="draws"`` grows the perturbation draws of each seed instead (the replicate is then the
draw, its value the mean over the seeds): comparisons with a floor, which draws nothing, are
left out. A round is an ordinary audit run, so a stopped run resumes, and a later call with a
larger cap goes on where this one stopped: the decisions are pure functions of the store and
the plan, whose spending keeps the first call's design cap (:class:`SequentialPlan`). The
rounds run are kept in the store's ``meta`` (``rounds``, with that design).
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

__all__ = ["Rounds", "run_until_decided", "decisions", "comparisons", "decisions_of_rounds"]

#: the columns of :attr:`Rounds.decisions`
COLUMNS = ("dataset", "model", "a", "b", "decision", "difference", "low", "high", "look",
           "level", "need", "next", "status", "reason")


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


def _paired(q: pd.DataFrame, a: str, b: str, on: str, grow: str
            ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(differences ``a - b``, replicates, queries): per (replicate, query) means, the
    replicate being the seed (``grow="seeds"``) or the draw."""
    from recaudit.audit._decide import _values

    key = "seed" if grow == "seeds" else "draw"
    sides = []
    for name in (a, b):
        g = q[q.perturbation == name]
        sides.append(g.assign(v=_values(g, on)).groupby([key, "query"], as_index=False)["v"]
                     .mean())
    both = sides[0].merge(sides[1], on=[key, "query"], suffixes=("_a", "_b"))
    return ((both["v_a"] - both["v_b"]).to_numpy(float), both[key].to_numpy(np.int64),
            both["query"].to_numpy(np.int64))


def decisions(store: Any, config: AuditConfig, plan: SequentialPlan, *,
              pairs: Sequence[tuple[str, str]] = (), on: str = "rbo", grow: str = "seeds"
              ) -> tuple[pd.DataFrame, dict[tuple[str, str, str, str], Sequential]]:
    """Every comparison of ``config`` decided on what ``store`` holds (module docstring):
    a frame of :data:`COLUMNS` and the :class:`~recaudit.stats.Sequential` of each, keyed by
    (dataset, model label, a, b); the whole run is one family (Holm over its comparisons)."""
    from recaudit.audit._decide import _groups

    labels = [perturbation_label(p) for p in config.perturbations]
    pairs_of = comparisons(labels, pairs, grow)
    models = [m.label for m in config.models]
    from recaudit.experiment import Store

    held = isinstance(store, Store) or Path(store).exists()
    groups = {(m, d): q for d, m, q in _groups(store, [on])} if held else {}
    keys, items = [], []
    for dataset in config.datasets:
        for model in models:
            q = next((v for (m, d), v in groups.items() if m == model and (
                d == dataset.label or d.startswith(f"{dataset.label} ["))), None)
            for a, b in pairs_of:
                if q is None:
                    d, r, u = np.empty(0), np.empty(0, np.int64), np.empty(0, np.int64)
                else:
                    d, r, u = _paired(q, a, b, on, grow)
                keys.append((dataset.label, model, a, b))
                items.append(replicates_estimator(d, r, u))
    rows, found = [], {}
    for (label, model, a, b), s in zip(keys, sequential_family(items, plan)):
        found[(label, model, a, b)] = s
        rows.append({"dataset": label, "model": model, "a": a, "b": b,
                     "decision": s.decision, "difference": s.difference,
                     "low": s.low, "high": s.high, "look": s.look, "level": s.level,
                     "need": s.need, "next": s.next, "status": s.status,
                     "reason": s.reason()})
    return pd.DataFrame(rows, columns=list(COLUMNS)), found


def _replicates(config: AuditConfig, grow: str, n: int) -> AuditConfig:
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
    say = progress or (lambda message: None)
    runner = run or run_audit
    started = time.perf_counter()
    store = Path(config.output)
    labels = {perturbation_label(p): p for p in config.perturbations}
    have = len(config.seeds) if grow == "seeds" else config.draws
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
    targets = {label: plan.first(have) for label in labels}
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
            part = dataclasses.replace(_replicates(config, grow, n),
                                       perturbations=tuple(labels[x] for x in names))
            runner(part)
        frame, found = decisions(store, config, plan, pairs=pairs, on=on, grow=grow)
        history.append({"call": call, "design": design, "round": len(history) + 1,
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
        for (_, _, a, b), s in found.items():
            if s.next is not None:
                for label in (a, b):
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
    and its config, read with ``config_of``), as ``(frame, plan, rounds)``; None when the
    store was not run until decided."""
    from recaudit.experiment import Store

    if isinstance(store, Store):
        meta = store.meta()
    else:
        with Store(store, read_only=True) as s:
            meta = s.meta()
    rounds = [r for r in meta.get("rounds", []) if r.get("plan")]
    if not rounds or "config" not in meta:
        return None
    last = rounds[-1]
    p = last["plan"]
    plan = SequentialPlan(alpha=p["alpha"], cap=p["cap"], margin=p["margin"],
                          design=last.get("design"), rule=p.get("rule", LEGACY_RULE),
                          futility=p.get("futility", True), detect=p.get("detect"))
    config = config_of(meta["config"])
    frame, _ = decisions(store, config, plan, pairs=[tuple(x) for x in p.get("pairs", [])],
                         on=p.get("on", "rbo"), grow=p.get("grow", "seeds"))
    return frame, plan, [r for r in rounds if r["call"] == last["call"]]
