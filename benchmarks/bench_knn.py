"""User-User kNN scoring (``user-user``, LensKit's UserKNN) against its previous kernel.

The anchor, measured in the same run on the same fitted model: the kernel recaudit used until
2026-11-27, a bounded min-heap per item fed with the item's raters in user order
(``O(users x ratings)`` heap offers per scoring of every user), kept here verbatim as the
reference. Today's kernel visits each user's candidates once by decreasing similarity
(``recaudit.models._cf._knn``).

Besides the times, the run checks what the change may move: the rank lists (``rank``, top-10
for every user) of both kernels on the data itself and on the modified data of Shriver
2018's fuzzing trials (each heuristic and size, ``--sets`` modification sets each; the trials
of ``recaudit reproduce run shriver2018-table4.6``), and how many scores differ beyond the
last bits (ties at the neighbourhood boundary, which the two kernels break differently).

    python benchmarks/bench_knn.py [--dataset ml-100k] [--sets 2] [--repeats 3]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from numba import njit

from recaudit.experiment import DatasetSpec, ModelSpec
from recaudit.models import checked_fit
from recaudit.models._cf import _knn


@njit(cache=True)
def _heap_user_user_scores(sims, users, indptr, rater, cval, umean, n_items, nn, min_nbrs,
                           min_sim, negative):
    """The previous kernel: CSC (indptr, rater, cval) of centred ratings by item; per item a
    bounded min-heap of the ``nn`` largest similarities offered in user order."""
    nb = sims.shape[0]
    out = np.full((nb, n_items), np.nan)
    buf_s = np.empty((1, nn))
    buf_v = np.empty((1, nn))
    cnt = np.zeros(1, dtype=np.int64)
    for b in range(nb):
        u = users[b]
        for i in range(n_items):
            cnt[0] = 0
            for p in range(indptr[i], indptr[i + 1]):
                v = rater[p]
                s = sims[b, v]
                if v != u and (s >= min_sim or (negative and -s >= min_sim)):
                    _knn._push(buf_s, buf_v, cnt, 0, s, cval[p], nn)
            c = cnt[0]
            if c >= min_nbrs and c > 0:
                num = 0.0
                den = 0.0
                for t in range(c):
                    num += buf_s[0, t] * buf_v[0, t]
                    den += abs(buf_s[0, t])
                out[b, i] = umean[u] + num / den
    return out


def heap_scores(model, users: np.ndarray) -> np.ndarray:
    sims = np.asarray((model.unit_[users] @ model.unit_.T).todense(), dtype=np.float64)
    csc = model.centred_.tocsc()
    csc.sort_indices()
    c = model.config
    return _heap_user_user_scores(sims, users.astype(np.int64), csc.indptr.astype(np.int64),
                                  csc.indices.astype(np.int64), csc.data, model.user_mean_,
                                  model.n_items_, c.max_nbrs, c.min_nbrs, float(c.min_sim),
                                  c.negative)


class _Heap:
    """The model with the previous kernel (for ``rank``)."""

    def __init__(self, model):
        self.model = model

    def __enter__(self):
        m = self.model
        m._score_users = lambda users: heap_scores(m, users)
        return m

    def __exit__(self, *exc):
        del self.model._score_users


def _best(f, repeats: int) -> float:
    best = np.inf
    for _ in range(repeats):
        t0 = time.perf_counter()
        f()
        best = min(best, time.perf_counter() - t0)
    return best


def compare(model, queries, k: int = 10) -> tuple[int, int, int]:
    """(rows whose top-k differ, scores further apart than 1e-9, scored pairs)."""
    users = np.arange(model.n_users_, dtype=np.int64)
    new = model._score_users(users)
    old = heap_scores(model, users)
    if not np.array_equal(np.isnan(new), np.isnan(old)):
        raise AssertionError("the two kernels score different (user, item) pairs")
    a = model.rank(queries, k=k).items
    with _Heap(model) as m:
        b = m.rank(queries, k=k).items
    scored = ~np.isnan(new)
    return (int((a != b).any(axis=1).sum()), int((np.abs(new - old)[scored] > 1e-9).sum()),
            int(scored.sum()))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dataset", default="ml-100k")
    ap.add_argument("--preset", default="user-user@shriver2018")
    ap.add_argument("--sets", type=int, default=2, help="modification sets per heuristic and "
                    "size (0: the data itself only)")
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()

    from recaudit.data import Queries
    from recaudit.fuzz._study import _ratings

    log = _ratings(DatasetSpec(args.dataset, min_user_interactions=0))
    spec = ModelSpec(args.preset)
    model = checked_fit(spec.create(), log, seed=0)
    users = np.arange(model.n_users_, dtype=np.int64)
    model._score_users(users[:2])
    heap_scores(model, users[:2])                          # both compiled before timing
    t_new = _best(lambda: model._score_users(users), args.repeats)
    t_old = _best(lambda: heap_scores(model, users), args.repeats)
    print(f"{args.preset} on {args.dataset} ({len(log):,} ratings, {log.n_users:,} users, "
          f"{log.n_items:,} items): scoring every user")
    print(f"  previous kernel (anchor) {t_old:8.3f} s")
    print(f"  this kernel              {t_new:8.3f} s   {t_old / t_new:5.1f}x faster")

    queries = Queries.next_item(log)
    rows, far, scored = compare(model, queries)
    print(f"  data itself: top-10 rows differing {rows} of {len(users)}; scores apart > 1e-9: "
          f"{far} of {scored:,}")
    if args.sets == 0:
        return
    from recaudit.fuzz import FuzzSpec
    from recaudit.perturb import Context
    from recaudit.seeds import make_rng

    base = model.rank(queries, k=10)
    total_rows = total_far = trials = 0
    for h in ("ARAND", "AMU", "ALI", "AMR", "AMA", "RRAND", "RMU", "CBRAND", "CMU"):
        for size in (1, 10, 100):
            for s in range(args.sets):
                fs = FuzzSpec(h, size)
                rng = make_rng(0, log.fingerprint(), fs.name, s)
                modified, _ = fs.perturb(log, rng, Context(queries=queries, baseline=base, k=10))
                m = checked_fit(spec.create(), modified, seed=0)
                r, f, _ = compare(m, queries)
                total_rows += r
                total_far += f
                trials += 1
    print(f"  {trials} fuzzing trials (9 heuristics x sizes 1, 10, 100 x {args.sets} sets): "
          f"top-10 rows differing {total_rows}; scores apart > 1e-9: {total_far}")


if __name__ == "__main__":
    main()
