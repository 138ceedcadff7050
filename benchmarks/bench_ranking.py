"""Rank lists from a score matrix: recaudit's selection against sorting every row (the anchor).

Every neural model ranks by scoring the whole catalogue for each test query and keeping the
best ``k`` (:func:`recaudit.models.top_k_from_scores`, ties by the lower item code). The anchor
is what recaudit did before and what most scripts do: sort each row by ``(-score, item)``
(``numpy.lexsort``), then cut. A stable ``numpy.argsort(-scores)`` (same order) is shown too.
Each case checks that the three give the same lists, then prints seconds and ratios:

1. Oh et al. 2022's Foursquare test set: 18,340 queries x 5,596 items, k = 10;
2. Wikipedia's: 15,700 queries x 1,000 items, k = 10;
3. a larger catalogue: 2,000 queries x 50,000 items, k = 10 and 100.

Scores are float32 (what the models give), rounded to 3 decimals so that ties occur.

    python benchmarks/bench_ranking.py             # about a minute on 2 cores
    python benchmarks/bench_ranking.py --quick     # smaller matrices, a few seconds
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from recaudit.models import top_k_from_scores

CASES = [("Foursquare (Oh et al. 2022)", 18_340, 5_596, 10),
         ("Wikipedia (Oh et al. 2022)", 15_700, 1_000, 10),
         ("50k-item catalogue", 2_000, 50_000, 10),
         ("50k-item catalogue", 2_000, 50_000, 100)]


def lexsort_rows(scores: np.ndarray, k: int) -> np.ndarray:
    n, m = scores.shape
    return np.lexsort((np.broadcast_to(np.arange(m), (n, m)), -scores), axis=-1)[:, :k]


def argsort_rows(scores: np.ndarray, k: int) -> np.ndarray:
    return np.argsort(-scores, axis=1, kind="stable")[:, :k]


def best_of(fn, repeat: int) -> tuple[float, np.ndarray]:
    best, out = np.inf, None
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t)
    return best, out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="a tenth of the queries")
    ap.add_argument("--repeat", type=int, default=2, help="best of N runs per method")
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    print(f"{'case':<30} {'queries':>8} {'items':>7} {'k':>4} {'lexsort s':>10} "
          f"{'argsort s':>10} {'recaudit s':>11} {'vs lexsort':>11} {'vs argsort':>11}")
    for name, n, m, k in CASES:
        n = max(1, n // 10) if args.quick else n
        scores = np.round(rng.standard_normal((n, m)), 3).astype(np.float32)
        t_lex, a = best_of(lambda: lexsort_rows(scores, k), args.repeat)
        t_arg, b = best_of(lambda: argsort_rows(scores, k), args.repeat)
        t_new, c = best_of(lambda: top_k_from_scores(scores, k).items, args.repeat)
        if not (np.array_equal(a, b) and np.array_equal(a, c)):
            raise SystemExit(f"{name}: the three methods disagree")
        print(f"{name:<30} {n:>8,} {m:>7,} {k:>4} {t_lex:>10.3f} {t_arg:>10.3f} {t_new:>11.3f} "
              f"{t_lex / t_new:>10.1f}x {t_arg / t_new:>10.1f}x")


if __name__ == "__main__":
    main()
