"""User-User and Item-Item kNN scoring (LensKit's UserKNN and ItemKNN) against their previous
kernels.

Anchors, measured in the same run on the same fitted model: the kernels recaudit used until
2026-11-27, kept here verbatim (``_old_*``). User-User's fed a bounded heap per item with the
item's raters in user order (``O(users x ratings)`` heap offers to score every user); today's
visits each user's candidates once by decreasing similarity. Item-Item's chose per user
between offering every rated item's neighbours to per-target heaps (*push*) and walking each
target's sorted similarity row (*scan*), push wherever it looked half as costly; today's
heaps rank ties by item code and add up in rank order, so push and scan give the same bits,
and push is chosen only where it is 35 times cheaper (a heap offer costs ~35 scan steps).

Besides the times, the run checks what the changes may move: the rank lists (``rank``,
top-10 for every user) of the two kernels on the data itself and on the modified data of
Shriver 2018's fuzzing trials (each heuristic and size, ``--sets`` modification sets each),
how many scores differ beyond the last bits (ties at the neighbourhood boundary, which the
kernels break differently), and, for Item-Item, that push and scan agree to the bit.

    python benchmarks/bench_knn.py [--dataset ml-100k] [--sets 1] [--repeats 3]
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
def _old_sift_down(buf_s, buf_v, pos, nn, t=0):
    """Restore the min-heap order of slot ``pos`` below node ``t`` (its root by default)."""
    while True:
        left = 2 * t + 1
        if left >= nn:
            return
        c = left
        if left + 1 < nn and buf_s[pos, left + 1] < buf_s[pos, left]:
            c = left + 1
        if buf_s[pos, c] < buf_s[pos, t]:
            buf_s[pos, c], buf_s[pos, t] = buf_s[pos, t], buf_s[pos, c]
            buf_v[pos, c], buf_v[pos, t] = buf_v[pos, t], buf_v[pos, c]
            t = c
        else:
            return


@njit(cache=True)
def _old_push(buf_s, buf_v, cnt, pos, s, v, nn):
    """Keep the ``nn`` largest similarities offered to slot ``pos``.

    The slot fills up in arrival order; once full it is a min-heap on the similarity, so a
    candidate that does not beat the smallest kept one is rejected in O(1) and a better one
    replaces it in O(log nn). A candidate equal to the smallest is rejected (earlier wins).
    """
    c = cnt[pos]
    if c < nn:
        buf_s[pos, c] = s
        buf_v[pos, c] = v
        cnt[pos] = c + 1
        if c + 1 == nn:                       # heapify
            for start in range(nn // 2 - 1, -1, -1):
                _old_sift_down(buf_s, buf_v, pos, nn, start)
        return
    if s > buf_s[pos, 0]:
        buf_s[pos, 0] = s
        buf_v[pos, 0] = v
        _old_sift_down(buf_s, buf_v, pos, nn)


@njit(cache=True)
def _old_item_item_scores(users, r_indptr, r_items, r_cval, s_indptr, s_nbr, s_val, imean,
                          n_items, nn, min_nbrs):
    """Item-item scores for a batch of users; NaN where fewer than ``min_nbrs`` neighbours.

    The rows of the similarity matrix are sorted by decreasing similarity (ties: lower item
    code first). Two equivalent strategies, chosen per user by estimated cost:

    - *push*: for every rated ``j`` and neighbour ``i`` of ``j``, offer ``(sim, r_uj - mean_j)``
      to ``i``'s bounded top-``nn`` buffer (cost ~ sum of the rated items' degrees);
    - *scan*: for every target ``i``, walk its sorted row and stop after ``nn`` rated items
      (cost ~ n_items * nn / fraction rated; cheap for heavy raters).
    """
    nb = len(users)
    out = np.full((nb, n_items), np.nan)
    buf_s = np.empty((n_items, nn))
    buf_v = np.empty((n_items, nn))
    cnt = np.zeros(n_items, dtype=np.int64)
    rated = np.full(n_items, np.nan)
    total = s_indptr[n_items]
    for b in range(nb):
        u = users[b]
        n_r = r_indptr[u + 1] - r_indptr[u]
        push_cost = 0
        for p in range(r_indptr[u], r_indptr[u + 1]):
            j = r_items[p]
            push_cost += s_indptr[j + 1] - s_indptr[j]
        scan_cost = min(total, n_items * nn * n_items // max(n_r, 1))
        if 2 * push_cost <= scan_cost:
            cnt[:] = 0
            for p in range(r_indptr[u], r_indptr[u + 1]):
                j = r_items[p]
                x = r_cval[p]
                for q in range(s_indptr[j], s_indptr[j + 1]):
                    _old_push(buf_s, buf_v, cnt, s_nbr[q], s_val[q], x, nn)
            for i in range(n_items):
                c = cnt[i]
                if c >= min_nbrs and c > 0:
                    num = 0.0
                    den = 0.0
                    for t in range(c):
                        num += buf_s[i, t] * buf_v[i, t]
                        den += abs(buf_s[i, t])
                    out[b, i] = imean[i] + num / den
        else:
            for p in range(r_indptr[u], r_indptr[u + 1]):
                rated[r_items[p]] = r_cval[p]
            for i in range(n_items):
                c = 0
                num = 0.0
                den = 0.0
                for q in range(s_indptr[i], s_indptr[i + 1]):
                    x = rated[s_nbr[q]]
                    if not np.isnan(x):
                        num += s_val[q] * x
                        den += abs(s_val[q])
                        c += 1
                        if c == nn:
                            break
                if c >= min_nbrs and c > 0:
                    out[b, i] = imean[i] + num / den
            for p in range(r_indptr[u], r_indptr[u + 1]):
                rated[r_items[p]] = np.nan
    return out


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
                    _old_push(buf_s, buf_v, cnt, 0, s, cval[p], nn)
            c = cnt[0]
            if c >= min_nbrs and c > 0:
                num = 0.0
                den = 0.0
                for t in range(c):
                    num += buf_s[0, t] * buf_v[0, t]
                    den += abs(buf_s[0, t])
                out[b, i] = umean[u] + num / den
    return out


def old_scores(model, users: np.ndarray) -> np.ndarray:
    """The previous kernel's scores of ``users`` on ``model`` (fitted by today's code: the
    fitted arrays did not change)."""
    users = users.astype(np.int64)
    c = model.config
    if isinstance(model, _knn.UserKNN):
        sims = np.asarray((model.unit_[users] @ model.unit_.T).todense(), dtype=np.float64)
        csc = model.centred_.tocsc()
        csc.sort_indices()
        return _heap_user_user_scores(sims, users, csc.indptr.astype(np.int64),
                                      csc.indices.astype(np.int64), csc.data,
                                      model.user_mean_, model.n_items_, c.max_nbrs,
                                      c.min_nbrs, float(c.min_sim), c.negative)
    s, r = model.sim_, model.centred_
    return _old_item_item_scores(users, r.indptr.astype(np.int64), r.indices.astype(np.int64),
                                 r.data, s.indptr.astype(np.int64), s.indices.astype(np.int64),
                                 s.data, model.item_mean_, model.n_items_, c.max_nbrs,
                                 c.min_nbrs)


def item_item_forced(model, users: np.ndarray, strategy: int) -> np.ndarray:
    c, s, r = model.config, model.sim_, model.centred_
    return _knn._item_item_scores(users.astype(np.int64), r.indptr.astype(np.int64),
                                  r.indices.astype(np.int64), r.data,
                                  s.indptr.astype(np.int64), s.indices.astype(np.int64),
                                  s.data, model.item_mean_, model.n_items_, c.max_nbrs,
                                  c.min_nbrs, strategy)


class _Old:
    """The model scoring with the previous kernel (for ``rank``)."""

    def __init__(self, model):
        self.model = model

    def __enter__(self):
        m = self.model
        m._score_users = lambda users: old_scores(m, users)
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
    """(rows whose top-k differ, scores further apart than 1e-9, scored pairs) of the two
    kernels; raises if they score different pairs or, for Item-Item, push and scan differ."""
    users = np.arange(model.n_users_, dtype=np.int64)
    new = model._score_users(users)
    old = old_scores(model, users)
    if not np.array_equal(np.isnan(new), np.isnan(old)):
        raise AssertionError("the two kernels score different (user, item) pairs")
    if isinstance(model, _knn.ItemKNN):
        push, scan = item_item_forced(model, users, 1), item_item_forced(model, users, 2)
        if not (np.array_equal(push, scan, equal_nan=True)
                and np.array_equal(push, new, equal_nan=True)):
            raise AssertionError("item-item: push and scan give different scores")
    a = model.rank(queries, k=k).items
    with _Old(model) as m:
        b = m.rank(queries, k=k).items
    scored = ~np.isnan(new)
    return (int((a != b).any(axis=1).sum()), int((np.abs(new - old)[scored] > 1e-9).sum()),
            int(scored.sum()))


def bench(preset: str, log, queries, sets: int, repeats: int) -> None:
    spec = ModelSpec(preset)
    model = checked_fit(spec.create(), log, seed=0)
    users = np.arange(model.n_users_, dtype=np.int64)
    model._score_users(users[:2])
    old_scores(model, users[:2])                           # both compiled before timing
    t_new = _best(lambda: model._score_users(users), repeats)
    t_old = _best(lambda: old_scores(model, users), repeats)
    print(f"{preset}: scoring every user")
    print(f"  previous kernel (anchor) {t_old:8.3f} s")
    print(f"  this kernel              {t_new:8.3f} s   {t_old / t_new:5.1f}x faster")
    if isinstance(model, _knn.ItemKNN):
        for name, strategy in (("push only", 1), ("scan only", 2)):
            item_item_forced(model, users[:2], strategy)
            t = _best(lambda st=strategy: item_item_forced(model, users, st), repeats)
            print(f"  {name:24} {t:8.3f} s")
    rows, far, scored = compare(model, queries)
    print(f"  data itself: top-10 rows differing {rows} of {len(users)}; scores apart > 1e-9: "
          f"{far} of {scored:,}")
    if sets == 0:
        return
    from recaudit.fuzz import FuzzSpec
    from recaudit.perturb import Context
    from recaudit.seeds import make_rng

    base = model.rank(queries, k=10)
    total_rows = total_far = trials = 0
    for h in ("ARAND", "AMU", "ALI", "AMR", "AMA", "RRAND", "RMU", "CBRAND", "CMU"):
        for size in (1, 10, 100):
            for s in range(sets):
                fs = FuzzSpec(h, size)
                rng = make_rng(0, log.fingerprint(), fs.name, s)
                modified, _ = fs.perturb(log, rng, Context(queries=queries, baseline=base, k=10))
                r, f, _ = compare(checked_fit(spec.create(), modified, seed=0), queries)
                total_rows += r
                total_far += f
                trials += 1
    print(f"  {trials} fuzzing trials (9 heuristics x sizes 1, 10, 100 x {sets} sets): "
          f"top-10 rows differing {total_rows}; scores apart > 1e-9: {total_far}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dataset", default="ml-100k")
    ap.add_argument("--models", default="user-user@shriver2018,item-item@shriver2018")
    ap.add_argument("--sets", type=int, default=1, help="modification sets per heuristic and "
                    "size (0: the data itself only)")
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()

    from recaudit.data import Queries
    from recaudit.fuzz._study import _ratings

    log = _ratings(DatasetSpec(args.dataset, min_user_interactions=0))
    print(f"{args.dataset}: {len(log):,} ratings, {log.n_users:,} users, {log.n_items:,} items")
    queries = Queries.next_item(log)
    for preset in args.models.split(","):
        bench(preset, log, queries, args.sets, args.repeats)


if __name__ == "__main__":
    main()
