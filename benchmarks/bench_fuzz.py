"""Time to generate modification sets (Shriver 2018, Table 4.5) and to infer influence.

Data: ``ml-latest-small`` (100,004 ratings, 671 users, 9,066 items) by default, or a
synthetic log (``--synthetic N``: N ratings, popularity-skewed, 20 genres). Baseline
recommendations: each user's top-10 unrated items by item mean rating (a stand-in, so the
benchmark measures the fuzzer, not a model).

Anchors, measured in the same run on the same data:

- influence: a pure-Python, set-based implementation of the user-influence definition of
  Table 4.1 (for every user, the set of other users whose top-k holds an item they rated);
- heuristics: ARAND (the thesis compares every heuristic's generation time with it), and one
  retraining of FunkSVD on the same data (the cost that dominates a trial).

    python benchmarks/bench_fuzz.py [--synthetic 1000000] [--repeats 5]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from recaudit.data import Interactions
from recaudit.fuzz import FuzzSpec, Recommendations, user_influence

HEURISTICS = ("ARAND", "AMU", "ALI", "AMR", "AMA", "RRAND", "RMU", "CBRAND", "CMU", "APORTFOLIO")


def synthetic(n: int, seed: int = 0) -> Interactions:
    rng = np.random.default_rng(seed)
    n_users, n_items = max(50, n // 150), max(100, n // 270)
    pop = 1.0 / np.arange(1, n_items + 1) ** 0.9
    keys = np.unique(rng.integers(0, n_users, 2 * n) * n_items
                     + rng.choice(n_items, 2 * n, p=pop / pop.sum()))[:n]
    rng.shuffle(keys)
    genres = [f"g{j}" for j in range(20)]
    attrs = {i: set(rng.choice(genres, rng.integers(1, 4), replace=False))
             for i in range(n_items)}
    return Interactions.from_codes(keys // n_items, keys % n_items, rating=rng.integers(
        1, 11, len(keys)) / 2.0, n_users=n_users, n_items=n_items, item_attributes=attrs)


def stand_in_recs(log: Interactions, k: int = 10) -> Recommendations:
    means = np.bincount(log.item, log.rating, log.n_items) / np.maximum(log.item_counts(), 1)
    order = np.argsort(-means, kind="stable")
    users = np.arange(log.n_users)
    items = np.empty((log.n_users, k), dtype=np.int64)
    rated = [set() for _ in users]
    for u, i in zip(log.user.tolist(), log.item.tolist(), strict=True):
        rated[u].add(i)
    head = order[:k + int(log.user_counts().max())].tolist()
    for u in users:
        items[u] = [i for i in head if i not in rated[u]][:k]
    return Recommendations(users, items)


def python_user_influence(log: Interactions, recs: Recommendations) -> list[int]:
    recommended_to: dict[int, set[int]] = {}
    for u, row in zip(recs.users.tolist(), recs.items.tolist(), strict=True):
        for i in row:
            recommended_to.setdefault(i, set()).add(u)
    rated: dict[int, set[int]] = {}
    for u, i in zip(log.user.tolist(), log.item.tolist(), strict=True):
        rated.setdefault(u, set()).add(i)
    out = []
    for u in range(log.n_users):
        reached: set[int] = set()
        for i in rated.get(u, ()):
            reached |= recommended_to.get(i, set())
        reached.discard(u)
        out.append(len(reached))
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--synthetic", type=int, default=0)
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    if args.synthetic:
        log = synthetic(args.synthetic)
    else:
        from recaudit.data.datasets import load

        log = load("ml-latest-small")
    print(f"{log!r}")
    recs = stand_in_recs(log)

    user_influence(log, recs)  # warm-up: loads / compiles the numba kernel
    t0 = time.perf_counter()
    fast = user_influence(log, recs)
    t_fast = time.perf_counter() - t0
    t0 = time.perf_counter()
    slow = python_user_influence(log, recs)
    t_slow = time.perf_counter() - t0
    assert fast.tolist() == slow
    print(f"user influence: recaudit {t_fast:.3f} s, pure-Python sets {t_slow:.3f} s "
          f"(x{t_slow / t_fast:.1f})")

    from recaudit.models import create

    t0 = time.perf_counter()
    create("funksvd").fit(log, seed=0)
    t_fit = time.perf_counter() - t0
    print(f"anchor: one FunkSVD fit {t_fit:.2f} s")
    print(f"{'heuristic':<11}" + "".join(f"{'M=' + str(m):>22}" for m in (1, 10, 100)))
    base: dict[int, float] = {}
    for name in HEURISTICS:
        # synthetic means rarely sit within 0.05 of a half star: widen AMR's window there
        params = {"epsilon": 0.25} if args.synthetic and name in ("AMR", "APORTFOLIO") else {}
        cells = []
        for m in (1, 10, 100):
            times = []
            for r in range(args.repeats):
                rng = np.random.default_rng(r)
                t0 = time.perf_counter()
                FuzzSpec(name, m, params).apply(log, rng, recommendations=recs)
                times.append(time.perf_counter() - t0)
            mean = float(np.mean(times))
            if name == "ARAND":
                base[m] = mean
            cells.append(f"{mean:8.4f} s (x{mean / base[m]:5.1f})")
        print(f"{name:<11}" + "".join(f"{c:>22}" for c in cells))
    print("(ratios are against ARAND at the same M; times include influence inference and "
          "applying the set)")


if __name__ == "__main__":
    main()
