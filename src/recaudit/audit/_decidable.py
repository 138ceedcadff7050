"""What an audit's comparisons can decide, before training: the power side of the dry run.

:func:`comparison_plan` gives one row per comparison the audit decides — the comparisons of
:func:`recaudit.audit.run_until_decided` (:func:`~recaudit.audit._rounds.comparisons` per
model, :func:`~recaudit.audit._rounds.model_comparisons` across models), which are also those
the tables of a plain run test once — with the smallest difference in mean RBO its paired
test at 0.05 detects with 80 % power at the planned replicates (:meth:`Estimate.detectable`
of the comparison's variance parts, projected by :meth:`Estimate.with_replicates`; both
levels, replicates and test queries: :mod:`recaudit.audit._dryrun`).

Each comparison's variance parts come, in this order, from:

- **its own pairs** in a store that holds both sides over two replicates or more — the
  audit's own store (basis ``store``), else the ``--like`` store (``like``): the paired
  differences per (seed, query) as the run pairs them;
- **a stand-in** otherwise (the source says which): for two perturbations of a model, the
  model's least detectable pair (:func:`recaudit.audit._dryrun.dry_run`'s figure, from a
  store or the calibration pair); for two models under a perturbation, the two models'
  variance parts of that perturbation's RBO added (two models' seeds are independent: the
  replicates' parts add; the queries' parts add too, which over-states the queries' part
  where the two models find the same queries hard — a conservative stand-in), each from a
  store holding the perturbation, else half the model's pair figure (a difference of two
  independent perturbations doubles each part: half of the calibration pair's is the
  calibration's one perturbation).

With ``until`` (an ``--until-decided`` run's :class:`~recaudit.stats.SequentialPlan`), each
row also speaks the sequential design's language (:func:`sequential_figures`): the cap, the
difference the design decides 80 % of the time with it (``at_cap``) and the replicates it
spends there on average (``spent_at_cap``), and, for a difference to ``detect``, the
replicates it spends on average (``expected_seeds``) and the share it decides
(``power_at_cap``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from recaudit.stats import Estimate, SequentialPlan, estimate_mean

__all__ = ["GroupBasis", "comparison_plan", "sequential_figures", "at_replicates",
           "difference_of_two", "COLUMNS"]

#: The columns of :func:`comparison_plan`'s frame.
COLUMNS = ("dataset", "kind", "model", "perturbation", "a", "b", "basis", "source",
           "stand_in", "replicates", "rbo_difference", "replicate_share", "seeds_for", "cap",
           "at_cap", "spent_at_cap", "expected_seeds", "power_at_cap")


@dataclass(frozen=True)
class GroupBasis:
    """What the dry run knows of one (dataset, model): the stores to read (``(path,
    dataset, model label, basis)``, the audit's own first) and its least detectable pair
    (``pair``: the raw estimate of a difference and its source, None when absent; from the
    store, the ``--like`` store or the calibration pair: ``pair_basis``)."""

    stores: tuple[tuple[Path, str, str, str], ...] = ()
    pair: tuple[Estimate, str] | None = None
    pair_basis: str = "none"


def at_replicates(est: Estimate, replicates: int) -> Estimate:
    """``est`` (a crossed design) as the audit would read it with ``replicates``: the
    replicates' part scaled (:meth:`~recaudit.stats.Estimate.with_replicates`); one replicate
    leaves the test the queries' part alone (its seed-to-seed variation unmeasured)."""
    if replicates > 1:
        return est.with_replicates(replicates)
    b, df = est.parts[1]
    return Estimate(est.mean, ((b, df),), est.units, 1, est.units, "queries")


def difference_of_two(one: Estimate, other: Estimate | None = None) -> Estimate:
    """The difference of two independent sides varying as ``one`` and ``other`` (default:
    ``one`` again) do: their variance parts added."""
    other = other or one
    parts = tuple((v + w, min(df, dg))
                  for (v, df), (w, dg) in zip(one.parts, other.parts, strict=True))
    return Estimate(0.0, parts, one.n, one.replicates, one.units, one.design)


def _half(est: Estimate) -> Estimate:
    """One side of a difference of two independent sides that vary alike: every part
    halved."""
    return Estimate(0.0, tuple((v / 2, df) for v, df in est.parts), est.n, est.replicates,
                    est.units, est.design)


def sequential_figures(est: Estimate, effect: float | None, plan: SequentialPlan,
                       family: int = 1) -> tuple[float, float, float | None, float]:
    """What the sequential design of ``plan`` does for a comparison varying as ``est`` (its
    raw estimate, projected to the cap), one of the ``family`` comparisons the run decides
    together (tested at ``alpha / family``, where Holm starts):
    ``(decided, spent, expected, power)`` — the difference it decides in its direction 80 %
    of the time and the replicates it spends there on average
    (:func:`recaudit.stats.design_summary`), and at ``effect`` (None: NaN) the replicates it
    spends on average and the share it decides. A plan of the ladder's rules (a store
    continued under ``bonferroni-sqrt``) has no design to read: the fixed design's figures
    stand in (the difference its test at the cap detects with 80 % power, the cap; the
    replicates its test needs for ``effect``, that test's power at the cap)."""
    from recaudit.stats import design_summary

    nan = float("nan")
    if not plan.calibrated:
        at_cap = at_replicates(est, plan.cap)
        need = est.replicates_for(effect) if effect is not None else None
        return (at_cap.detectable(), float(plan.cap),
                float(need) if need is not None else nan,
                at_cap.power(effect) if effect is not None else nan)
    s = design_summary(est, plan, comparisons=family, detect=effect)
    return (s.decided, s.spent,
            s.detect_spent if s.detect_spent is not None else nan,
            s.power if s.power is not None else nan)


def _values(path: Path, dataset: str, label: str) -> pd.DataFrame:
    from recaudit.audit._decide import one_draw
    from recaudit.audit._store import AuditStore

    with AuditStore(path, read_only=True) as store:
        return one_draw(store.query_values(("rbo",), dataset, label))


def _crossed(est: Estimate) -> Estimate | None:
    return est if est.design == "crossed" else None


def _paired(ga: pd.DataFrame, gb: pd.DataFrame, key: str) -> Estimate | None:
    """The difference ``a - b`` per (replicate, query) — ``key`` the replicate, ``seed``
    (a seed's draws averaged) or ``draw`` — over the replicates both hold (a crossed
    design: two or more), else None."""
    if ga.empty or gb.empty:
        return None
    sides = [g.groupby([key, "query"], as_index=False)["rbo"].mean() for g in (ga, gb)]
    both = sides[0].merge(sides[1], on=[key, "query"], suffixes=("_a", "_b"))
    if both.empty:
        return None
    return _crossed(estimate_mean((both.rbo_a - both.rbo_b).to_numpy(float),
                                  both[key].to_numpy(), both["query"].to_numpy()))


def _single(g: pd.DataFrame, key: str) -> Estimate | None:
    """One side's RBO per (replicate, query) (crossed: two replicates or more)."""
    if g.empty:
        return None
    s = g.groupby([key, "query"], as_index=False)["rbo"].mean()
    return _crossed(estimate_mean(s.rbo.to_numpy(float), s[key].to_numpy(),
                                  s["query"].to_numpy()))


class _Reader:
    """The per-query RBO of the stores, each read once."""

    def __init__(self) -> None:
        self._seen: dict[tuple[Path, str, str], pd.DataFrame] = {}

    def __call__(self, path: Path, dataset: str, label: str) -> pd.DataFrame:
        key = (path, dataset, label)
        if key not in self._seen:
            self._seen[key] = _values(path, dataset, label) if path.exists() else \
                pd.DataFrame(columns=["perturbation", "seed", "draw", "query", "rbo"])
        return self._seen[key]


def _within(read: _Reader, basis: GroupBasis, a: str, b: str, key: str
            ) -> tuple[Estimate, str, str, bool] | None:
    for path, dataset, label, name in basis.stores:
        q = read(path, dataset, label)
        est = _paired(q[q.perturbation == a], q[q.perturbation == b], key)
        if est is not None:
            return est, name, f"{a} vs {b}", False
    if basis.pair is not None:
        est, source = basis.pair
        return est, basis.pair_basis, source, basis.pair_basis != "calibration"
    return None


def _side(read: _Reader, basis: GroupBasis, pert: str, key: str
          ) -> tuple[Estimate, str, str] | None:
    """One model's variance parts of ``pert``'s RBO (module docstring)."""
    for path, dataset, label, name in basis.stores:
        q = read(path, dataset, label)
        est = _single(q[q.perturbation == pert], key)
        if est is not None:
            return est, name, pert
    if basis.pair is not None:
        return _half(basis.pair[0]), basis.pair_basis, f"half of {basis.pair[1]}"
    return None


def _across(read: _Reader, bases: dict[str, GroupBasis], pert: str, a: str, b: str,
            key: str) -> tuple[Estimate, str, str, bool] | None:
    for (path, dataset, label, name) in bases[a].stores:
        if label != a:
            continue
        qa = read(path, dataset, a)
        qb = read(path, dataset, b)
        est = _paired(qa[qa.perturbation == pert], qb[qb.perturbation == pert], key)
        if est is not None:
            return est, name, f"{a} vs {b} under {pert}", False
    sa, sb = _side(read, bases[a], pert, key), _side(read, bases[b], pert, key)
    if sa is None or sb is None:
        return None
    basis = sa[1] if sa[1] == sb[1] else f"{sa[1]} + {sb[1]}"
    return (difference_of_two(sa[0], sb[0]), basis,
            f"{a}: {sa[2]}; {b}: {sb[2]} (added)", basis != "calibration")


def comparison_plan(config, bases: dict[tuple[str, str], GroupBasis], replicates: int, *,
                    detect: float | None = None, until: SequentialPlan | None = None,
                    grow: str = "seeds", pairs: Sequence[tuple[str, str]] = ()
                    ) -> pd.DataFrame:
    """One row per comparison ``config`` decides (module docstring; columns
    :data:`COLUMNS`; ``stand_in``: no store holds the comparison's pair and another one
    stands in, ``source`` says which; a calibration is a stand-in by design). ``bases``:
    per (dataset label, model label); ``replicates``: planned (seeds, or draws when
    ``grow`` is ``draws``: the run's replicate); ``detect``: a difference to find the
    replicates for; ``until``: the plan of an ``--until-decided`` run."""
    from recaudit.audit._rounds import comparisons, model_comparisons
    from recaudit.audit._spec import perturbation_label

    labels = [perturbation_label(p) for p in config.perturbations]
    models = [m.label for m in config.models]
    read = _Reader()
    key = "seed" if grow == "seeds" else "draw"
    rows = []
    for dataset in config.datasets:
        of = {m: bases.get((dataset.label, m), GroupBasis()) for m in models}
        todo = [("perturbations", m, "", a, b) for m in models
                for a, b in comparisons(labels, pairs, grow)]
        todo += [("models", "", p, a, b) for p, a, b in model_comparisons(models, labels, grow)]
        for kind, model, pert, a, b in todo:
            found = (_within(read, of[model], a, b, key) if kind == "perturbations"
                     else _across(read, of, pert, a, b, key))
            rows.append((dataset.label, kind, model, pert, a, b, found))
    return pd.DataFrame([_row(*r, replicates, detect, until, len(rows)) for r in rows],
                        columns=list(COLUMNS))


def _row(dataset: str, kind: str, model: str, pert: str, a: str, b: str,
         found: tuple[Estimate, str, str, bool] | None, replicates: int,
         detect: float | None, until: SequentialPlan | None, family: int) -> dict:
    nan = float("nan")
    row = {"dataset": dataset, "kind": kind, "model": model, "perturbation": pert, "a": a,
           "b": b, "basis": "none", "source": "", "stand_in": False, "replicates": replicates,
           "rbo_difference": nan, "replicate_share": nan, "seeds_for": None,
           "cap": until.cap if until is not None else None, "at_cap": nan,
           "spent_at_cap": nan, "expected_seeds": nan, "power_at_cap": nan}
    if found is None:
        return row
    est, basis, source, stand_in = found
    at = at_replicates(est, replicates)
    total = sum(v for v, _ in at.parts)
    row.update(basis=basis, source=source, stand_in=stand_in, rbo_difference=at.detectable(),
               replicate_share=(at.parts[0][0] / total if total > 0 else nan)
               if at.design == "crossed" else 0.0,
               seeds_for=None if detect is None else est.replicates_for(detect))
    if until is not None:
        decided, spent, expected, power = sequential_figures(est, detect, until, family)
        row.update(at_cap=decided, spent_at_cap=spent)
        if detect is not None:
            row.update(expected_seeds=expected, power_at_cap=power)
    return row
