"""Power and trials of runs that stop when decided, against fixed designs: one comparison,
and the paper-scale records' families.

**One comparison** (``--one``): the crossed design of issue 59 (seeds x 150 test queries;
seed sd 1, query sd 0.2, cell sd 1), cap 32, at true differences of 0, 0.5, 1, 1.5, 2 and 3
times ``delta``, the difference the fixed test at the cap (32 seeds, the two-level interval)
detects with 80 % power. Each study runs through the public API as ``--until-decided`` runs
it (``sequential_test`` after each round, on to ``next``), under the default design with
futility on and off and under the ladder's Bonferroni rule of earlier runs; the anchors,
measured in the same run on the same differences: the fixed design at the cap (its power)
and the fixed design of the same power (the smallest ``n`` whose fixed test reaches the
sequential power, by the two-level interval's exact power). Printed per difference: power
(decided in the right direction; at 0: any decision, the false ones) and mean seeds.

**The records' families** (default): for each paper-scale record whose claims rest on
replicates (Shriver 2018's modification sets, Zhu et al. 2023's seeds), every tested
comparison of its claims is simulated from what the record measured: two independent samples
(Welch: each cell's mean and spread) or one difference per replicate (paired: its mean and
spread). The designs then decide every comparison of the experiment at the paper's alpha:

- **sequential** (``--until-decided`` as shipped): rounds up the looks 3, 4, 6, 8, 12, ...
  to the cap, each comparison stopping when decided, for futility or at the cap
  (:func:`recaudit.stats.sequential_family`, Holm over the experiment); a cell (a measure
  key: one heuristic of one model at one size, one algorithm at one mix) costs the most
  replicates any of its comparisons read;
- **fixed at the cap**: every cell at the cap, Welch's or the paired t-test at the same
  alpha, Holm over the same comparisons, *on the same simulated data* as the sequential runs
  (paired: the difference is what the looks and the futility stop cost, without the two
  designs' sampling noise); each comparison's power (decided in the record's direction)
  beside the sequential's: the largest loss over the comparisons is printed;
- **fixed with the same power** (the ratio's anchor): every cell at the smallest ``n`` whose
  share of comparisons decided in the record's direction (400 simulated experiments per
  ``n``) reaches the sequential design's.

Printed per record: cells, comparisons, both designs' power, the largest per-comparison loss
against the cap, replicates per cell (mean of the sequential's, the fixed ``n``) and the
ratio of trials spent (sequential / fixed with the same power). ``--multiples`` runs each
record's family with every comparison's difference set to a multiple of its own cap
difference instead (power and replicates per cell, sequential against fixed at the cap).

    python benchmarks/bench_sequential.py [--one] [--sims 200] [--records ...]
        [--rule NAME | --spending KIND:SHAPE:TAIL[:SLACK]] [--futility off] [--multiples]

Each record reads its own seeded streams (one for the sequential runs, one for the fixed
design), so two invocations with different options are measured on the same simulated data
against the same fixed-design power curve.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
from scipy import stats as sps

from recaudit.reproduce import get, load_measures, load_record
from recaudit.reproduce._sequential import leaf_estimator
from recaudit.reproduce.rules import Contrast, Less, _frame, _pairs
from recaudit.stats import (LEGACY_RULE, Estimate, SequentialPlan, holm, rungs_upto,
                            sequential_family, sequential_test, welch)
import recaudit.stats._sequential as _sequential_module
from recaudit.stats._spending import DEFAULT_RULE, RULES, Rule

RECORDS = ("shriver2018-table4.6", "shriver2018-table4.7-4.8", "shriver2018-table4.9",
           "zhu2023-figure7", "zhu2023-figure8", "zhu2023-table3")


def _comparisons(exp, measures):
    """(kind, cells, parameters) of every tested leaf with replicates: ``welch`` with the two
    cells' means and sds, or ``paired`` with the difference's mean and sd per replicate."""
    out = []
    for claim in exp.claims:
        for leaf in claim.rule.leaves():
            if not all(k in measures for k in leaf._keys()):
                continue
            est = leaf_estimator(leaf, measures.samples, measures)
            if est is None:
                continue
            at, n = est
            if n < 3:
                continue
            if isinstance(leaf, Less):
                a, b = (leaf.a, leaf.b) if leaf.above else (leaf.b, leaf.a)
                fa, fb = _frame(measures.samples, a), _frame(measures.samples, b)
                sa = leaf.scale if not leaf.above else 1.0
                sb = leaf.scale if leaf.above else 1.0
                if _pairs(fa, fb) is None:  # independent sets
                    xa, xb = sa * fa.value.to_numpy(float), sb * fb.value.to_numpy(float)
                    out.append(("welch", (a, b), (xa.mean(), xa.std(ddof=1), xb.mean(),
                                                   xb.std(ddof=1))))
                    continue
            e = at(n)
            if e.design != "replicates" and not isinstance(leaf, Contrast):
                continue
            sd = float(np.sqrt(sum(v for v, _ in e.parts) * n))
            out.append(("paired", tuple(leaf._keys()), (e.mean, sd)))
    return out


def _draw(rng, kind, params, n):
    if kind == "welch":
        ma, sa, mb, sb = params
        return rng.normal(ma, max(sa, 1e-12), n), rng.normal(mb, max(sb, 1e-12), n)
    m, sd = params
    return (rng.normal(m, max(sd, 1e-12), n),)


def _sequential(rng, comps, alpha, cap, rule, futility=True):
    """The run as shipped: every comparison starts at its first look; after each round the
    family is decided together (Holm on repeated p-values) and the undecided ones go on to
    their ``next`` (none: decided, stopped for futility, at or beyond the cap)."""
    plan = SequentialPlan(alpha=alpha, cap=cap, rule=rule, futility=futility)
    data = [_draw(rng, kind, params, cap) for kind, _, params in comps]
    estimators = [(lambda d: (lambda r: welch(d[0][:r], d[1][:r])))(d) if kind == "welch"
                  else _replicates(d[0]) for (kind, _, _), d in zip(comps, data)]
    n = [plan.first()] * len(comps)
    while True:
        out = sequential_family(list(zip(estimators, n)), plan)
        grown = [s.next if s.next is not None else m for s, m in zip(out, n)]
        if grown == n:
            break
        n = grown
    right, ps, fixed_right = [], [], []
    for (kind, _, params), s, d in zip(comps, out, data):
        truth = np.sign(params[0] - params[2]) if kind == "welch" else np.sign(params[0])
        right.append(s.decision == ("greater" if truth > 0 else "less"))
        # the fixed design at the cap on the same data (paired: their difference is what
        # the looks and the futility stop cost, without the two designs' sampling noise)
        t = sps.ttest_ind(d[0], d[1], equal_var=False) if kind == "welch" else \
            sps.ttest_1samp(d[0], 0.0)
        ps.append(float(np.nan_to_num(t.pvalue, nan=1.0)))
        fixed_right.append(np.sign(d[0].mean() - (d[1].mean() if kind == "welch" else 0.0))
                           == truth)
    fixed = (holm(np.array(ps)) < alpha) & np.array(fixed_right)
    return np.array([s.look for s in out]), np.array(right), fixed


def _replicates(x):
    from recaudit.stats import estimate_mean

    return lambda r: estimate_mean(x[:r], np.arange(r))


def _fixed(rng, comps, alpha, n, studies):
    """Power of the fixed design at ``n`` replicates per cell over ``studies`` simulated
    experiments: Welch's t-test (``scipy.stats.ttest_ind``, ``equal_var=False``, as
    :func:`recaudit.stats.welch_test`) or the t-test of the per-replicate differences, Holm over
    the experiment at ``alpha``; the share of comparisons decided in the true direction."""
    ps, right = [], []
    for kind, _, params in comps:
        if kind == "welch":
            ma, sa, mb, sb = params
            x = rng.normal(ma, max(sa, 1e-12), (studies, n))
            y = rng.normal(mb, max(sb, 1e-12), (studies, n))
            t = sps.ttest_ind(x, y, axis=1, equal_var=False)
            diff, truth = x.mean(1) - y.mean(1), np.sign(ma - mb)
        else:
            m, sd = params
            x = rng.normal(m, max(sd, 1e-12), (studies, n))
            t = sps.ttest_1samp(x, 0.0, axis=1)
            diff, truth = x.mean(1), np.sign(m)
        ps.append(np.nan_to_num(t.pvalue, nan=1.0))
        right.append(np.sign(diff) == truth)
    p = np.array(ps)  # comparisons x studies
    adj = np.apply_along_axis(holm, 0, p)
    return float(np.mean((adj < alpha) & np.array(right)))


def _scaled(comps, alpha, cap, multiple):
    """``comps`` with every difference set to ``multiple`` times the one the fixed test at
    the cap detects with 80 % power at ``alpha / len(comps)`` (its spread kept)."""
    out = []
    for kind, keys, params in comps:
        if kind == "welch":
            ma, sa, mb, sb = params
            se = np.sqrt((sa ** 2 + sb ** 2) / cap)
            d = 0.0
            if se > 0:
                df = max(1.0, (cap - 1) * (sa ** 2 + sb ** 2) ** 2 / (sa ** 4 + sb ** 4))
                d = Estimate(0.0, ((se ** 2, df),), cap, cap, 2, "two-sample").detectable(
                    alpha / len(comps))
            out.append((kind, keys, (mb + multiple * d, sa, mb, sb)))
        else:
            m, sd = params
            d = Estimate(0.0, ((sd ** 2 / cap, cap - 1.0),), cap, cap, 1, "replicates"
                         ).detectable(alpha / len(comps)) if sd > 0 else 0.0
            out.append((kind, keys, (multiple * d, sd)))
    return out


#: The differences of ``--one`` and ``--multiples``, in multiples of the cap's 80 % one.
MULTIPLES = (0.0, 0.5, 1.0, 1.5, 2.0, 3.0)


def _one_study(rng, effect, plan, queries=150, sd_seed=1.0, sd_query=0.2, sd_cell=1.0):
    """One comparison run as ``--until-decided`` runs it (module docstring)."""
    b = sd_query * rng.standard_normal(queries)
    y = (effect + sd_seed * rng.standard_normal((plan.cap, 1)) + b[None, :]
         + sd_cell * rng.standard_normal((plan.cap, queries)))
    n = plan.first()
    while True:
        s = sequential_test(y[:n].ravel(), np.repeat(np.arange(n), queries),
                            np.tile(np.arange(queries), n), plan=plan)
        if s.next is None:
            return s
        n = s.next


def one(sims: int) -> None:
    """``--one``: one comparison (module docstring)."""
    queries, cap = 150, 32

    def est(n):  # the crossed design's variance parts at n seeds
        return Estimate(0.0, (((1.0 + 1.0 / queries) / n, n - 1.0),
                              (0.04 / queries, queries - 1.0)), n * queries, n, queries,
                        "crossed")
    delta = est(cap).detectable(0.05, 0.8)
    designs = {"default (futility on)": SequentialPlan(cap=cap),
               "default, --futility off": SequentialPlan(cap=cap, futility=False),
               "bonferroni-sqrt (earlier runs)": SequentialPlan(cap=cap, rule=LEGACY_RULE)}
    print(f"one comparison, crossed (seeds x {queries} queries; seed sd 1, query sd 0.2, "
          f"cell sd 1), cap {cap}, alpha 0.05; delta = {delta:.4f} (the fixed {cap}-seed "
          f"test's 80 % difference); {sims} studies per cell")
    print(f"{'difference':>10} {'design':32} {'power':>6} {'seeds':>6} {'fixed@cap':>9} "
          f"{'fixed, same power: n':>21}")
    for m in MULTIPLES:
        at_cap = est(cap).power(m * delta, 0.05) if m else 0.05
        for name, plan in designs.items():
            rng = np.random.default_rng([59, int(10 * m)])  # the same studies per design
            t0 = time.perf_counter()
            runs = [_one_study(rng, m * delta, plan) for _ in range(sims)]
            power = np.mean([r.decided if m == 0 else r.decision == "greater" for r in runs])
            seeds = np.mean([r.look for r in runs])
            # (a simulated power of 1 is matched at 0.999: the exact power never reaches 1)
            same = next((n for n in range(3, 10 * cap) if est(n).power(m * delta, 0.05)
                         >= min(power, 0.999)), None) if m else None
            print(f"{m:>9}x {name:32} {power:6.3f} {seeds:6.1f} {at_cap:9.3f} "
                  f"{same if same else '-':>21}   ({time.perf_counter() - t0:.0f} s)",
                  flush=True)


def _family(rng, comps, cells, alpha, cap, rule, futility, sims):
    """(power per comparison, the fixed design's at the cap on the same data, mean
    replicates per cell) of the sequential design."""
    spent, right, fixed = [], [], []
    for _ in range(sims):
        looks, hit, at_cap = _sequential(rng, comps, alpha, cap, rule, futility)
        per_cell = {c: 0 for c in cells}
        for (_, keys, _), n in zip(comps, looks):
            for c in keys:
                per_cell[c] = max(per_cell[c], int(n))
        spent.append(sum(per_cell.values()) / len(cells))
        right.append(hit)
        fixed.append(at_cap)
    return np.mean(right, axis=0), np.mean(fixed, axis=0), float(np.mean(spent))


def _records(args):
    """Each record's family (module docstring)."""
    root = Path(args.records)
    totals = {"seq": 0.0, "fixed": 0.0, "record": 0.0}
    if args.multiples:
        print(f"{'record':28} {'cap':>4} {'difference':>10} {'power seq':>9} "
              f"{'power fix@cap':>13} {'largest loss':>12} {'n seq/cell':>10}")
    else:
        print(f"{'record':28} {'cells':>5} {'comps':>5} {'cap':>4} {'power seq':>9} "
              f"{'fix@cap':>7} {'largest loss':>12} {'n seq/cell':>10} {'n same':>6} "
              f"{'n record':>8} {'seq/same':>8}")
    for name in RECORDS if args.only is None else args.only.split(","):
        # one stream per record and design: every rule reads the same simulated data and is
        # measured against the same fixed-design power curve (paired comparisons of rules)
        index = RECORDS.index(name)
        rec = load_record(root, name, "paper")
        if rec is None:
            continue
        exp = get(name)
        comps = _comparisons(exp, load_measures(root, rec))
        if not comps:
            continue
        cells = sorted({c for _, keys, _ in comps for c in keys})
        n_record = max(len(load_measures(root, rec).samples[c]) for c in cells)
        cap = rungs_upto(max(n_record, 3) * 2)[-1] if name.startswith("zhu") else 128
        studies = max(400, args.sims)
        for m in MULTIPLES if args.multiples else (None,):
            rng = np.random.default_rng([2026, index])
            rng_fixed = np.random.default_rng([2027, index])
            family = comps if m is None else _scaled(comps, exp.alpha, cap, m)
            t0 = time.perf_counter()
            power, at_cap, per_cell = _family(rng, family, cells, exp.alpha, cap, args.rule,
                                              args.futility == "on", args.sims)
            loss = float(np.max(at_cap - power))
            if m is not None:
                print(f"{name:28} {cap:4d} {m:>9}x {power.mean():9.3f} {at_cap.mean():13.3f} "
                      f"{loss:12.3f} {per_cell:10.1f}   ({time.perf_counter() - t0:.0f} s)",
                      flush=True)
                continue
            p_seq = float(power.mean())
            n_fixed = next((n for n in range(3, 4 * cap + 1)
                            if _fixed(rng_fixed, comps, exp.alpha, n, studies) >= p_seq), None)
            seq_trials = per_cell * len(cells)
            fixed_trials = (n_fixed or 4 * cap) * len(cells)
            totals["seq"] += seq_trials
            totals["fixed"] += fixed_trials
            totals["record"] += n_record * len(cells)
            print(f"{name:28} {len(cells):5d} {len(comps):5d} {cap:4d} {p_seq:9.3f} "
                  f"{at_cap.mean():7.3f} {loss:12.3f} {per_cell:10.1f} "
                  f"{n_fixed or '>' + str(4 * cap):>6} {n_record:8d} "
                  f"{seq_trials / fixed_trials:8.2f}   ({time.perf_counter() - t0:.0f} s)",
                  flush=True)
    if not args.multiples and totals["fixed"]:
        print(f"all: sequential / fixed with the same power = "
              f"{totals['seq'] / totals['fixed']:.2f} "
              f"({1 - totals['seq'] / totals['fixed']:.0%} fewer trials); sequential / the "
              f"records' designs = {totals['seq'] / totals['record']:.2f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--one", action="store_true", help="one comparison (module docstring)")
    ap.add_argument("--sims", type=int, default=200)
    ap.add_argument("--records", default="docs/reproduction/records")
    ap.add_argument("--only", default=None, help="comma-separated records (default: all)")
    ap.add_argument("--multiples", action="store_true", help="every comparison at multiples "
                    "of its cap's 80 %% difference instead of the record's own")
    ap.add_argument("--rule", default=DEFAULT_RULE, help="the spending rule (RULES of "
                    "recaudit.stats._spending)")
    ap.add_argument("--futility", default="on", choices=("on", "off"))
    ap.add_argument("--spending", default=None, metavar="KIND:SHAPE:TAIL[:SLACK]",
                    help="an unnamed rule instead (e.g. bonferroni:1:0.1, "
                    "calibrated:3:0)")
    ap.add_argument("--optimism", type=float, default=None, help="standard errors a "
                    "projection leans towards a decision (the ladder's rules; default: as "
                    "shipped)")
    ap.add_argument("--steps", type=int, default=None, help="rungs one round may climb "
                    "(the ladder's rules; default: as shipped)")
    args = ap.parse_args()
    if args.spending:
        kind, *numbers = args.spending.split(":")
        RULES[args.spending] = Rule(kind, *map(float, numbers))
        args.rule = args.spending
    if args.optimism is not None:
        _sequential_module.OPTIMISM = args.optimism
    if args.steps is not None:
        _sequential_module.STEPS = args.steps
    if args.one:
        one(args.sims)
    else:
        _records(args)


if __name__ == "__main__":
    main()
