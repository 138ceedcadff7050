"""Speed of the 12 property templates at ML-20M scale (the study size of Shriver 2018).

Synthetic universe: 138,493 users x top-10 lists over 26,744 items (popularity-skewed, Zipf
exponent 1.1), 20,000,263 ratings (0.5..5.0), 20 genre-like attributes (1-3 per item). Times
every template of Table 3.4 (16 instantiations: the 12 templates with the study's f / ∼) and
compares with the anchor: a pure-Python, per-user set-based implementation of four templates
(NRANKS, NRL, NRS, NUIR) in the style of the thesis' universe (Figures 3.5-3.7), measured in
the same run on the same data. 20 % of the users share one of 500 lists (exercises NRLMU and
NUPRL). Target: all templates < 30 s on 2 cores.

    python benchmarks/bench_properties.py [--users 138493] [--items 26744] [--ratings 20000263]
"""

from __future__ import annotations

import argparse
import time
from collections import Counter

import numpy as np

from recaudit.properties import STUDY_PROPERTIES, Universe, instantiate


def synthetic(n_users: int, n_items: int, n_ratings: int, k: int, seed: int) -> Universe:
    rng = np.random.default_rng(seed)
    pop = 1.0 / np.arange(1, n_items + 1) ** 1.1
    pop /= pop.sum()
    perm = rng.permutation(n_items)
    # top-k lists: k distinct popularity-skewed items per user (Gumbel top-k trick, chunked)
    ranking = np.empty((n_users, k), dtype=np.int32)
    logp = np.log(pop)
    cand = rng.choice(n_items, size=min(n_items, 2000), replace=False, p=pop)  # plausible pool
    for s in range(0, n_users, 8192):
        e = min(n_users, s + 8192)
        g = logp[cand][None, :] - np.log(-np.log(rng.random((e - s, len(cand)))))
        top = np.argpartition(-g, k - 1, axis=1)[:, :k]
        order = np.take_along_axis(-g, top, axis=1).argsort(axis=1)
        ranking[s:e] = perm[cand[np.take_along_axis(top, order, axis=1)]]
    copy = rng.random(n_users) < 0.2                          # 20 % share one of 500 lists
    ranking[copy] = ranking[rng.integers(0, 500, size=int(copy.sum()))]
    ranking[rng.random(n_users) < 0.01, k // 2:] = -1        # a few partial lists
    r_item = perm[rng.choice(n_items, size=n_ratings, p=pop)].astype(np.int32)
    r_user = rng.integers(0, n_users, size=n_ratings, dtype=np.int32)
    r_val = rng.integers(1, 11, size=n_ratings).astype(np.float64) / 2
    genres = [f"g{j:02d}" for j in range(20)]
    n_attr = rng.integers(1, 4, size=n_items)
    attrs = {i: frozenset(rng.choice(genres, size=n_attr[i], replace=False).tolist())
             for i in range(n_items)}
    return Universe(ranking, n_items, r_user, r_item, r_val, attrs)


def anchor(u: Universe, k: int) -> dict[str, float]:
    """Thesis-style per-user Python sets (the reference the vectorised code is compared to)."""
    lists = [tuple(int(i) for i in row[:k] if i >= 0) for row in u.ranking]
    out = {"NRANKS (min, >=)": float(min(len(x) for x in lists)),
           "NRL": float(len(set(lists))),
           "NRS": float(len({frozenset(x) for x in lists}))}
    counts = Counter(i for x in lists for i in x)
    out["NUIR (max, >=)"] = float(max(counts.values()))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--users", type=int, default=138_493)
    ap.add_argument("--items", type=int, default=26_744)
    ap.add_argument("--ratings", type=int, default=20_000_263)
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    t0 = time.perf_counter()
    u = synthetic(a.users, a.items, a.ratings, a.k, a.seed)
    print(f"synthetic universe: {a.users:,} users x top-{a.k}, {a.items:,} items, "
          f"{a.ratings:,} ratings (built in {time.perf_counter() - t0:.1f} s)")
    t_all, c_all = time.perf_counter(), time.process_time()
    values = {}
    for p in STUDY_PROPERTIES:
        t = time.perf_counter()
        res = instantiate(p.template, u, k=a.k, **dict(p.params))
        values[p.label] = res.value
        shown = res.value if p.numeric else f"({len(res.value)} attributes)"
        print(f"  {p.label:<18} {time.perf_counter() - t:7.3f} s   value {shown}")
    total, cpu = time.perf_counter() - t_all, time.process_time() - c_all
    print(f"all {len(STUDY_PROPERTIES)} instantiations of the 12 templates: {total:.2f} s wall, "
          f"{cpu:.2f} s CPU (target < 30 s on 2 cores)")
    t = time.perf_counter()
    ref = anchor(u, a.k)
    t_anchor = time.perf_counter() - t
    t = time.perf_counter()
    for label in ref:
        p = next(q for q in STUDY_PROPERTIES if q.label == label)
        instantiate(p.template, u, k=a.k, **dict(p.params))
    t_ours = time.perf_counter() - t
    same = all(ref[lab] == values[lab] for lab in ref)
    print(f"anchor (per-user Python sets) NRANKS+NRL+NRS+NUIR: {t_anchor:.2f} s; recaudit "
          f"{t_ours:.2f} s; speed-up x{t_anchor / t_ours:.1f}; same values: {same}")


if __name__ == "__main__":
    main()
