"""Trials spent by runs that stop when decided against the fixed design with the same power,
on the records' own variance structure.

For each paper-scale record whose claims rest on replicates (Shriver 2018's modification
sets, Zhu et al. 2023's seeds), every tested comparison of its claims is simulated from what
the record measured: two independent samples (Welch: each cell's mean and spread) or one
difference per replicate (paired: its mean and spread). Both designs then decide every
comparison of the experiment at the paper's alpha:

- **sequential** (``--until-decided`` as shipped): rounds up the ladder 3, 4, 6, 8, 12, ...
  to the cap, each comparison stopping when decided or beyond the cap
  (:func:`recaudit.stats.sequential_family`, Holm over the experiment); a cell (a measure
  key: one heuristic of one model at one size, one algorithm at one mix) costs the most
  replicates any of its comparisons read;
- **fixed** (the records' design): every cell at the same ``n``, Welch's or the paired t-test
  at the same alpha, Holm over the same comparisons at the end; ``n`` is the smallest number
  of replicates whose share of comparisons decided in the record's direction (the power,
  averaged over the comparisons, from 400 simulated experiments per ``n``) reaches the
  sequential design's. (With 20 per ``n``, as before, the first ``n`` whose noisy estimate
  reached the target came too early: the anchor then favoured the fixed design.)

Printed per record: cells, comparisons, both designs' power, replicates per cell (mean of the
sequential's, the fixed ``n``) and the ratio of trials spent (sequential / fixed), with the
anchor, the record's own fixed design (its replicates per cell), beside it. The goal of issue
48: at least 30 % fewer trials.

    python benchmarks/bench_sequential.py [--sims 200] [--records docs/reproduction/records]
        [--rule NAME | --spending KIND:SHAPE:TAIL[:SLACK]] [--optimism 1] [--steps 1]

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
from recaudit.stats import SequentialPlan, holm, rungs_upto, sequential_family, welch
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


def _sequential(rng, comps, alpha, cap, rule):
    """The run as shipped: every comparison starts at 3 replicates; after each round the
    family is decided together (Holm on repeated p-values) and the undecided ones whose
    projection fits the cap go on to their ``next``."""
    plan = SequentialPlan(alpha=alpha, cap=cap, rule=rule)
    data = [_draw(rng, kind, params, cap) for kind, _, params in comps]
    estimators = [(lambda d: (lambda r: welch(d[0][:r], d[1][:r])))(d) if kind == "welch"
                  else _replicates(d[0]) for (kind, _, _), d in zip(comps, data)]
    n = [3] * len(comps)
    while True:
        out = sequential_family(list(zip(estimators, n)), plan)
        grown = [s.next if s.next is not None else m for s, m in zip(out, n)]
        if grown == n:
            break
        n = grown
    right = []
    for (kind, _, params), s in zip(comps, out):
        truth = np.sign(params[0] - params[2]) if kind == "welch" else np.sign(params[0])
        right.append(s.decision == ("greater" if truth > 0 else "less"))
    return np.array(n), np.array(right)


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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sims", type=int, default=200)
    ap.add_argument("--records", default="docs/reproduction/records")
    ap.add_argument("--only", default=None, help="comma-separated records (default: all)")
    ap.add_argument("--rule", default=DEFAULT_RULE, help="the spending rule (RULES of "
                    "recaudit.stats._spending)")
    ap.add_argument("--spending", default=None, metavar="KIND:SHAPE:TAIL[:SLACK]",
                    help="an unnamed rule instead (e.g. bonferroni:1:0.1, "
                    "group-sequential:2:0.05:0.1)")
    ap.add_argument("--optimism", type=float, default=None, help="standard errors a "
                    "projection leans towards a decision (default: as shipped)")
    ap.add_argument("--steps", type=int, default=None, help="rungs one round may climb "
                    "(default: as shipped)")
    args = ap.parse_args()
    if args.spending:
        kind, *numbers = args.spending.split(":")
        RULES[args.spending] = Rule(kind, *map(float, numbers))
        args.rule = args.spending
    if args.optimism is not None:
        _sequential_module.OPTIMISM = args.optimism
    if args.steps is not None:
        _sequential_module.STEPS = args.steps
    root = Path(args.records)
    totals = {"seq": 0.0, "fixed": 0.0, "record": 0.0}
    print(f"{'record':28} {'cells':>5} {'comps':>5} {'power seq':>9} {'power fix':>9} "
          f"{'n seq/cell':>10} {'n fixed':>7} {'n record':>8} {'seq/fixed':>9} "
          f"{'seq/record':>10}")
    for name in RECORDS if args.only is None else args.only.split(","):
        # one stream per record and design: every rule reads the same simulated data and is
        # measured against the same fixed-design power curve (paired comparisons of rules)
        index = RECORDS.index(name)
        rng, rng_fixed = np.random.default_rng([2026, index]), np.random.default_rng([2027, index])
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
        t0 = time.perf_counter()
        spent, power = [], []
        for _ in range(args.sims):
            looks, right = _sequential(rng, comps, exp.alpha, cap, args.rule)
            per_cell = {c: 0 for c in cells}
            for (_, keys, _), n in zip(comps, looks):
                for c in keys:
                    per_cell[c] = max(per_cell[c], int(n))
            spent.append(sum(per_cell.values()))
            power.append(right.mean())
        p_seq = float(np.mean(power))
        n_fixed, p_fixed = None, 0.0
        for n in range(3, 4 * cap + 1):
            p_fixed = _fixed(rng_fixed, comps, exp.alpha, n, max(400, args.sims))
            if p_fixed >= p_seq:
                n_fixed = n
                break
        seq_trials = float(np.mean(spent))
        fixed_trials = (n_fixed or 4 * cap) * len(cells)
        totals["seq"] += seq_trials
        totals["fixed"] += fixed_trials
        totals["record"] += n_record * len(cells)
        print(f"{name:28} {len(cells):5d} {len(comps):5d} {p_seq:9.3f} {p_fixed:9.3f} "
              f"{seq_trials / len(cells):10.1f} {n_fixed or '>' + str(4 * cap):>7} "
              f"{n_record:8d} {seq_trials / fixed_trials:9.2f} "
              f"{seq_trials / (n_record * len(cells)):10.2f}   ({time.perf_counter() - t0:.0f} s)")
    print(f"all: sequential / fixed with the same power = {totals['seq'] / totals['fixed']:.2f}"
          f" ({1 - totals['seq'] / totals['fixed']:.0%} fewer trials); sequential / the "
          f"records' designs = {totals['seq'] / totals['record']:.2f}")


if __name__ == "__main__":
    main()
