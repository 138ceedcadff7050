"""Power before compute: what an audit would train, how long it would take, what it could detect.

:func:`dry_run` plans a config without running it:

- **fits**: per (dataset, model), the baselines (one per seed, shared by that seed's
  perturbations and draws) and the perturbed fits (one per trial; ``none`` fits nothing; a
  perturbation that draws nothing at random has one trial per baseline whatever ``draws``
  says: :meth:`AuditConfig.draws_of`), and how many of each the store (and the baseline
  cache) already holds;
- **time**: from the store when it holds finished trials of the model — the median of their
  own times (``trials.total_seconds``: fit, ranking and perturbation; the median, because the
  first trial of a group also carries its baseline's fit), per remaining fit — which is what
  a resumed paper-scale run needs, and costs no training; else from the ``--like`` store's
  trials of the same model (name and parameters) on the same data and split, the same median
  (``like``); otherwise a one-epoch calibration on
  this machine — the model trained for one epoch on the first seed's training split, then
  ranking the test queries — extrapolated as ``epochs x s/epoch + rank s`` per fit (a model
  without epochs is calibrated with one whole fit; for a model with early stopping,
  ``patience``, an upper bound, and the basis says so: ``calibration; at most: early
  stopping``); ``remaining fits x s/fit / workers``;
- **stacks** (``executor.stack = K > 1``): the perturbed fits of a baseline group train K at a
  time as one stacked model (:func:`recaudit.models.sequential.fit_stack`); with a
  calibration, one epoch of a stack of ``min(K, perturbed fits per group)`` models (seeds
  ``s, s+1, ...``) is timed too, and the stack's speed-up — ``members x s/epoch / stack
  s/epoch`` — divides the perturbed fits' time (baselines train alone); a model that cannot
  stack (not sequential, stabilised) gets 1. ``trials_per_hour``: the remaining trials over
  the estimated wall time. A ``+warm`` retrain (:mod:`recaudit.audit._warm`) adds its warm
  start, ``warm_epochs x removed rows / training rows`` epochs (``warm_epochs`` of the row,
  in epochs of the whole log), and a second ranking;
- **power**: the smallest difference in mean RBO between two perturbations that the audit's
  paired test at 0.05 detects with 80 % power at the planned replicates (seeds, or seeds x
  draws), from *both* levels of variation — between replicates and between test queries
  (:meth:`recaudit.stats.Estimate.detectable`: the test's exact power, the replicates' part
  shrinking as ``1 / replicates`` with its t quantile, the queries' part kept). At two or
  three seeds the replicates' part decides: its t quantile has 1-2 degrees of freedom. The
  variance parts come from, in this order: the audit's own store when it holds two
  perturbations of the model over two replicates or more (``store``); a store of an earlier,
  similar audit (``like``: ``--like STORE``; its trials of the same model, parameters, data
  and split when it has them, else the same model's on the same dataset, else its first —
  with a warning naming what differs); else a *calibration pair* (``calibration``): the audit's first
  perturbation (the floor when it has no other) run as two real trials at one epoch, with
  seeds ``s`` and ``s + 1`` — four one-epoch fits, which also time the fits — whose per-query
  RBO gives both parts of one perturbation, doubled for a difference of two (independent)
  perturbations. Two seeds give the replicates' variance one degree of freedom: the figure
  can be off by a factor of two or three either way, and the table says which basis it rests
  on. From a store, the pairs of perturbations it holds are each estimated (paired as the
  audit pairs them, :func:`recaudit.audit.compare_perturbations`) and the least detectable
  comparison is reported (``source``): pairs of non-floor perturbations first, else a
  perturbation against a floor. ``detect``: a difference the user asks to detect; the plan
  then says how many seeds reach it (``seeds_for``; None: no number of seeds, the queries'
  part alone is too large);
- **comparisons**: the same figures for every comparison the audit decides, the models'
  comparisons included (:mod:`recaudit.audit._decidable`);
- **until decided** (``until``: the plan of ``--until-decided``): the fits of its first
  round (the first rung of the ladder at or above the seeds), and what the cap allows at
  most (``at_cap``), each comparison's detectable difference at the cap and, for
  ``detect``, its expected replicates and power there.
"""

from __future__ import annotations

import dataclasses
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from recaudit.audit._context import cache_key
from recaudit.audit._decidable import (GroupBasis, at_replicates, comparison_plan,
                                       difference_of_two)
from recaudit.audit._like import Like, like_store
from recaudit.audit._spec import AuditConfig, TrialSpec, build_model, perturbation_label
from recaudit.experiment import ArrayCache, prepare
from recaudit.stats import Estimate, SequentialPlan, estimate_mean

__all__ = ["DryRun", "dry_run"]


@dataclass(frozen=True)
class DryRun:
    """The plan of an audit (module docstring). ``fits``: one row per (dataset, model) with
    ``baselines``, ``perturbed``, ``stored_baselines``, ``stored_trials``, ``remaining``
    (fits: baselines and perturbed), ``remaining_baselines``,
    ``epochs``, ``s_per_epoch``, ``rank_s`` (the calibration's; NaN when timed from the
    store), ``s_per_fit``, ``time_basis`` (``store``, ``like``, ``calibration`` or ``none``),
    ``hours`` (serial), ``stack_speedup`` (the stack's calibrated speed-up; 1 without a
    stack), ``warm_epochs`` (the remaining warm starts of ``+warm`` retrains, in epochs of
    the whole training log; module docstring);
    ``workers``, ``stack``;
    ``detectable``: one row per (dataset, model) with ``queries``, ``replicates`` (planned:
    seeds x draws), ``basis`` (``store``, ``like``, ``calibration`` or ``none``), ``source``
    (the comparison it rests on), ``rbo_difference`` (detectable at the planned replicates),
    ``replicate_share`` (the replicates' share of the difference's variance there) and
    ``seeds_for`` (seeds that reach ``detect``; None without it, or when none do);
    ``comparisons``: one row per comparison the audit decides
    (:func:`recaudit.audit._decidable.comparison_plan`; empty: nothing to compare);
    ``until``: the plan of an ``--until-decided`` run (None for a plain one), whose first
    round (``first_round`` replicates: seeds, or draws) ``fits`` plans, and ``at_cap``: per
    (dataset, model) the fits still to train (``remaining``) and their ``hours`` if every
    comparison ran to the cap (None without ``until``)."""

    fits: pd.DataFrame
    detectable: pd.DataFrame
    workers: int
    stack: int = 1
    comparisons: pd.DataFrame = dataclasses.field(default_factory=pd.DataFrame)
    until: SequentialPlan | None = None
    at_cap: pd.DataFrame | None = None
    first_round: int | None = None

    @property
    def trials_per_hour(self) -> float:
        """Remaining trials (perturbed fits; their baselines' time included) per hour of wall
        time (NaN when nothing is timed)."""
        hours = self.hours
        timed = self.fits[self.fits["hours"].notna()]
        todo = float((timed["remaining"] - timed["remaining_baselines"]).sum())
        return todo / hours if hours > 0 else float("nan")

    @property
    def hours(self) -> float:
        """Estimated wall time of what remains, in hours, over the executor's workers."""
        return float(self.fits["hours"].sum()) / max(1, self.workers)

    @property
    def hours_at_cap(self) -> float:
        """The wall time if every comparison ran to the cap (NaN without ``until``, or
        untimed)."""
        if self.at_cap is None:
            return float("nan")
        return float(self.at_cap["hours"].sum(min_count=1)) / max(1, self.workers)


def _calibration(trial: TrialSpec, progress) -> tuple[float, float, int, Estimate]:
    """The calibration pair (module docstring): ``trial``'s first perturbation as two
    one-epoch trials with seeds ``s`` and ``s + 1``; returns (s per epoch, rank s, epochs of
    the real fit, the per-query RBO estimate of one perturbation over the two seeds)."""
    import tempfile

    from recaudit.audit._runner import run_trial

    probe = build_model(trial.model)
    params = probe.get_params() if hasattr(probe, "get_params") else {}
    epochs = params.get("epochs")
    spec = trial.model
    if isinstance(epochs, int) and epochs > 1:
        spec = dataclasses.replace(spec, params={**dict(spec.params), "epochs": 1})
    one = dataclasses.replace(trial, model=spec)
    frames, fit_s, rank_s = [], [], []
    with tempfile.TemporaryDirectory(prefix="recaudit-calibration-") as tmp:
        for seed in (trial.seed, trial.seed + 1):
            if progress is not None:
                progress(f"calibrating {trial.model.label} on {trial.dataset.label}: "
                         f"{perturbation_label(trial.perturbation)}, one epoch, seed {seed} "
                         "(a baseline and a perturbed fit)")
            out = run_trial(dataclasses.replace(one, seed=seed), cache_dir=tmp)
            frames.append(out.queries.assign(seed=seed))
            fit_s.append(out.row["fit_seconds"] / 2)
            rank_s.append(out.row["rank_seconds"] / 2)
    q = pd.concat(frames, ignore_index=True)
    est = estimate_mean(q["rbo"].to_numpy(float), q["seed"].to_numpy(), q["query"].to_numpy())
    return (float(np.mean(fit_s)), float(np.mean(rank_s)),
            epochs if isinstance(epochs, int) and epochs > 1 else 1, est)


def _stops_early(trial: TrialSpec) -> bool:
    """Whether ``trial``'s model may stop before its epochs (``patience``): a calibrated time
    of ``epochs x s/epoch`` is then an upper bound."""
    probe = build_model(trial.model)
    params = probe.get_params() if hasattr(probe, "get_params") else {}
    return params.get("patience") is not None


def _store_estimate(path: Path, dataset: str, label: str, planned: tuple[str, ...],
                    replicates: int) -> tuple[Estimate, str] | None:
    """The least detectable pair of perturbations of (``dataset``, ``label``) in the store at
    ``path`` (pairs of the ``planned`` perturbations first, then any; non-floor pairs before
    pairs with a floor; module docstring) with two replicates or more; None if none."""
    from recaudit.audit._decide import FLOORS, _pair, one_draw
    from recaudit.audit._store import AuditStore

    if not path.exists():
        return None
    with AuditStore(path, read_only=True) as store:
        q = one_draw(store.query_values(("rbo",), dataset, label))
    if q.empty:
        return None
    held = list(dict.fromkeys(q["perturbation"]))
    perts = sorted(held, key=lambda p: planned.index(p) if p in planned else len(planned))
    pairs = [(a, b) for i, a in enumerate(perts) for b in perts[i + 1:]]
    if not pairs:
        return None

    def rank(pair: tuple[str, str]) -> tuple[int, int]:
        return (-sum(p in planned for p in pair), sum(p in FLOORS for p in pair))

    best = min(rank(p) for p in pairs)
    found: list[tuple[float, Estimate, str]] = []
    for a, b in (p for p in pairs if rank(p) == best):
        x, y, r, u = _pair(q[q.perturbation == a], q[q.perturbation == b], "rbo", "rbo")
        est = estimate_mean(x - y, r, u)
        if est.design == "crossed":
            found.append((at_replicates(est, replicates).detectable(), est, f"{a} vs {b}"))
    if not found:
        return None
    _, est, source = max(found, key=lambda f: f[0])
    return est, source


def _stack_speedup(trial: TrialSpec, members: int, s_per_epoch: float) -> float:
    """``members x s/epoch / s per stacked epoch``: one epoch of ``members`` models of
    ``trial`` trained as one stack (seeds ``seed, seed + 1, ...``); 1 for a model that cannot
    stack."""
    from recaudit.models.sequential import SequentialRecommender, fit_stack

    if members < 2 or trial.model.stabilise is not None:
        return 1.0
    spec = trial.model
    if isinstance(build_model(spec), SequentialRecommender):
        spec = dataclasses.replace(spec, params={**dict(spec.params), "epochs": 1})
    models = [build_model(spec) for _ in range(members)]
    if not all(isinstance(m, SequentialRecommender) for m in models):
        return 1.0
    _, split = prepare(trial.dataset, trial.split)
    t0 = time.perf_counter()
    fit_stack(models, [split.train] * members, [trial.seed + i for i in range(members)])
    return members * s_per_epoch / (time.perf_counter() - t0)


def _store_seconds(output: Path, ids: set[str]) -> float | None:
    """Median own time of the finished trials ``ids`` in the store (None if none)."""
    from recaudit.audit._analysis import trial_summary

    if not ids or not output.exists():
        return None
    s = trial_summary(output)
    t = s.loc[s["trial_id"].isin(ids), "total_seconds"].dropna()
    return float(t.median()) if len(t) else None


def _calibration_trial(items: list) -> TrialSpec:
    """The trial the calibration pair repeats: the first of a perturbation that is not a
    floor, else the first that perturbs at all, else the first."""
    from recaudit.audit._decide import FLOORS

    labels = [perturbation_label(t.perturbation) for t, _, _ in items]
    for keep in (lambda x: x not in FLOORS, lambda x: x != "none", lambda x: True):
        for (t, _, _), label in zip(items, labels):
            if keep(label):
                return t
    raise ValueError("no trial to calibrate")


def dry_run(config: AuditConfig, *, calibrate: bool = True, like: str | Path | None = None,
            detect: float | None = None, progress=None, until: SequentialPlan | None = None,
            grow: str = "seeds") -> DryRun:
    """Plan ``config`` (module docstring); ``calibrate=False`` skips the one-epoch fits (no
    time estimate, power only from a store); ``like``: a store of an earlier, similar audit
    to read the variance from; ``detect``: a difference in mean RBO to find the seeds for;
    ``progress(message)``: called before each calibration fit (what is being timed);
    ``until``: plan an ``--until-decided`` run with this plan, growing ``grow`` (its first
    round, what the cap allows at most, and its comparisons at the cap; an audit with nothing
    to decide is refused, as the run refuses it)."""
    from recaudit.audit._rounds import first_round, nothing_to_decide, with_replicates
    from recaudit.audit._study import _cache, plan
    from recaudit.audit._store import AuditStore

    if detect is not None and not 0 < detect < 1:
        from recaudit.errors import ConfigError

        raise ConfigError(f"detect must be a difference in mean RBO in (0, 1), got {detect}",
                          key="detect", hint="e.g. --detect 0.01")
    from recaudit.audit._holds import check_store

    check_store(config)  # as the run would: no audit of other data into the store
    full, first = None, None
    if until is not None:
        why = nothing_to_decide(config, grow=grow)
        if why is not None:
            from recaudit.errors import ConfigError

            raise ConfigError(f"--until-decided: {why}", hint="add the seed-only floor (-p "
                              "seed-only), another perturbation or another --model; or plan "
                              "without --until-decided")
        full = with_replicates(config, grow, until.last)
        first = first_round(config, until, grow)
        config = with_replicates(config, grow, first)
    planned = plan(config)
    output = Path(config.output)
    done: set[str] = set()
    if output.exists():
        with AuditStore(output, read_only=True) as store:
            done = store.finished()
    cache_uri = _cache(config)
    cache = ArrayCache(cache_uri) if cache_uri is not None else None
    rows, power = [], []
    bases: dict[tuple[str, str], GroupBasis] = {}
    stack = config.executor.stack
    draws = max((config.draws_of(p) for p in config.perturbations), default=1)
    replicates = len(config.seeds) * max(1, draws)
    names = tuple(perturbation_label(p) for p in config.perturbations)
    groups: dict[tuple[str, str], list] = {}
    for trial, tid, key in planned:
        groups.setdefault((trial.dataset.label, trial.model.label), []).append(
            (trial, tid, key))
    for (dataset, label), items in groups.items():
        keys = list(dict.fromkeys(k for _, _, k in items))
        open_keys = {k for _, tid, k in items if tid not in done}
        cached = sum(1 for k in keys if cache is not None
                     and cache.has(cache_key(items[0][0], k)))
        perturbed = sum(1 for t, _, _ in items if perturbation_label(t.perturbation) != "none")
        stored = sum(1 for _, tid, _ in items if tid in done)
        remaining_pert = sum(1 for t, tid, _ in items
                             if tid not in done and perturbation_label(t.perturbation) != "none")
        remaining_base = sum(1 for k in open_keys if cache is None
                             or not cache.has(cache_key(items[0][0], k)))
        remaining = remaining_base + remaining_pert
        trial = items[0][0]
        n_queries = len(prepare(trial.dataset, trial.split)[1].queries)
        row = {"dataset": dataset, "model": label, "baselines": len(keys),
               "perturbed": perturbed, "stored_baselines": cached, "stored_trials": stored,
               "remaining": remaining, "remaining_baselines": remaining_base,
               "epochs": np.nan,
               "s_per_epoch": np.nan, "rank_s": np.nan, "s_per_fit": np.nan,
               "time_basis": "none", "hours": np.nan, "stack_speedup": 1.0,
               "warm_epochs": 0.0}
        found, basis = _store_estimate(output, dataset, label, names, replicates), "store"
        stores = [(output, dataset, label, "store")]
        earlier = Path(like) if like is not None else None
        similar = like_store(earlier, trial) if earlier is not None else Like(None)
        if earlier is not None and similar.group is not None:
            stores.append((earlier, *similar.group, "like"))
            if found is None:
                found = _store_estimate(earlier, *similar.group, names, replicates)
                basis = "like"
        own = _store_seconds(output, {tid for _, tid, _ in items if tid in done})
        timed = own if own is not None else similar.seconds
        if timed is not None:
            row.update(s_per_fit=timed, time_basis="store" if own is not None else "like",
                       hours=remaining * timed / 3600)
        if calibrate and (timed is None or found is None):
            fit_s, rank_s, epochs, one = _calibration(_calibration_trial(items), progress)
            if timed is None:
                per_fit = epochs * fit_s + rank_s
                group_size = max(Counter(k for t, tid, k in items if tid not in done and
                                         perturbation_label(t.perturbation) != "none").values(),
                                 default=0)
                speedup = (_stack_speedup(trial, min(stack, group_size), fit_s) if stack > 1
                           else 1.0)
                warm, warm_trials = _warm_epochs(items, done)
                fit_hours = ((remaining_base + remaining_pert / speedup) * epochs
                             + warm) * fit_s
                row.update(epochs=epochs, s_per_epoch=fit_s, rank_s=rank_s, s_per_fit=per_fit,
                           time_basis="calibration" + ("; at most: early stopping"
                                                       if _stops_early(trial) else ""),
                           stack_speedup=speedup, warm_epochs=warm,
                           hours=(fit_hours + (remaining + warm_trials) * rank_s) / 3600)
            if found is None and one.design == "crossed":
                found = (difference_of_two(one), "calibration pair (one epoch, "
                         f"{perturbation_label(_calibration_trial(items).perturbation)}, "
                         "seeds s and s + 1)")
                basis = "calibration"
        rows.append(row)
        power.append(_power_row(dataset, label, n_queries, replicates, found, basis, detect,
                                max(1, draws)))
        bases[(dataset, label)] = GroupBasis(tuple(stores), found,
                                             basis if found is not None else "none")
    fits = pd.DataFrame(rows)
    compared = comparison_plan(config, bases, len(config.seeds) if grow == "seeds" else draws,
                               detect=detect, until=until, grow=grow)
    return DryRun(fits, pd.DataFrame(power), config.executor.workers, stack, compared,
                  until, None if full is None else _at_cap(full, fits, done, cache), first)


def _at_cap(full: AuditConfig, fits: pd.DataFrame, done: set[str], cache) -> pd.DataFrame:
    """Per (dataset, model): the fits of ``full`` (the audit at the cap) still to train,
    and their hours at the first round's time per fit (the stack's speed-up left out: an
    upper bound where it stacks)."""
    from recaudit.audit._study import plan

    count: dict[tuple[str, str], int] = {}
    keys: dict[tuple[str, str], set] = {}
    for trial, tid, key in plan(full):
        group = (trial.dataset.label, trial.model.label)
        count[group] = count.get(group, 0) + (tid not in done and perturbation_label(
            trial.perturbation) != "none")
        if tid not in done and not (cache is not None and cache.has(cache_key(trial, key))):
            keys.setdefault(group, set()).add(key)
    rows = []
    for f in fits.itertuples():
        remaining = count.get((f.dataset, f.model), 0) + len(keys.get((f.dataset, f.model), ()))
        rows.append({"dataset": f.dataset, "model": f.model, "remaining": remaining,
                     "hours": remaining * f.s_per_fit / 3600})
    return pd.DataFrame(rows)


def _warm_epochs(items: list, done: set[str]) -> tuple[float, int]:
    """The warm starts of the remaining ``+warm`` retrain trials (:mod:`._warm`), in epochs
    of the whole training log: each trains ``warm_epochs`` epochs over its window's rows
    only, ``warm_epochs x removed / rows``; and how many there are (each ranks once more)."""
    from recaudit.perturb import parse

    total, count = 0.0, 0
    shares: dict[str, float] = {}
    for trial, tid, _ in items:
        spec = parse(trial.perturbation)
        if tid in done or not spec.needs.warm:
            continue
        label = perturbation_label(trial.perturbation)
        if label not in shares:
            train = prepare(trial.dataset, trial.split)[1].train
            _, record = spec.apply(train, np.random.default_rng(0))  # type: ignore[attr-defined]
            shares[label] = record.removed / len(train)
        total += int(getattr(spec, "warm_epochs", 1)) * shares[label]
        count += 1
    return total, count


def _power_row(dataset: str, label: str, n_queries: int, replicates: int,
               found: tuple[Estimate, str] | None, basis: str, detect: float | None,
               draws: int) -> dict:
    """One row of :attr:`DryRun.detectable` (module docstring)."""
    nan = float("nan")
    row = {"dataset": dataset, "model": label, "queries": n_queries, "replicates": replicates,
           "basis": "none", "source": "", "rbo_difference": nan, "replicate_share": nan,
           "seeds_for": None}
    if found is None:
        return row
    est, source = found
    at = at_replicates(est, replicates)
    total = sum(v for v, _ in at.parts)
    need = None if detect is None else est.replicates_for(detect)
    row.update(basis=basis, source=source, rbo_difference=at.detectable(),
               replicate_share=(at.parts[0][0] / total if total > 0 else nan)
               if at.design == "crossed" else 0.0,
               seeds_for=None if need is None else -(-need // draws))
    return row
