"""Filters applied before splitting: minimum activity and k-cores."""

from __future__ import annotations

import numpy as np

from recaudit.data._interactions import Interactions

__all__ = ["filter_min_interactions", "k_core", "compact"]


def compact(log: Interactions) -> Interactions:
    """Drop users and items that have no rows and renumber the codes densely.

    Relative order of codes is kept (code ``a < b`` stays ``a' < b'``), so a compacted log
    sorts its id maps the same way as the original. Item attributes follow their items.
    """
    used_u = np.flatnonzero(log.user_counts() > 0)
    used_i = np.flatnonzero(log.item_counts() > 0)
    if len(used_u) == log.n_users and len(used_i) == log.n_items:
        return log
    umap = np.full(log.n_users, -1, dtype=np.int64)
    umap[used_u] = np.arange(len(used_u))
    imap = np.full(log.n_items, -1, dtype=np.int64)
    imap[used_i] = np.arange(len(used_i))
    attrs = None
    if log.item_attributes is not None:
        attrs = {int(imap[i]): v for i, v in log.item_attributes.items() if imap[i] >= 0}
    return log.replace(user=umap[log.user], item=imap[log.item], user_ids=log.user_ids[used_u],
                       item_ids=log.item_ids[used_i], item_attributes=attrs)


def filter_min_interactions(
    log: Interactions, min_user: int = 10, min_item: int = 0, *, renumber: bool = True
) -> Interactions:
    """Drop users with fewer than ``min_user`` rows, then items with fewer than ``min_item``.

    One pass, in that order (Oh et al. 2022 §5 and Betello et al. 2023 §4 remove users with fewer than 10
    interactions). Use :func:`k_core` for the iterated version. With ``renumber`` the result
    is :func:`compact`-ed.
    """
    if min_user < 0 or min_item < 0:
        raise ValueError("min_user and min_item must be >= 0")
    keep = log.user_counts()[log.user] >= min_user
    out = log.take(keep)
    if min_item > 0:
        out = out.take(out.item_counts()[out.item] >= min_item)
    return compact(out) if renumber else out


def sample_users(log: Interactions, n: int, *, seed: int = 0) -> Interactions:
    """A uniform random sample of ``n`` users with all their rows, compacted.

    The sample is drawn from ``make_rng("sample_users", seed, n, log.fingerprint())``, so the
    same log, ``n`` and ``seed`` always give the same users; with ``n >= n_users`` the log is
    returned unchanged (compacted). Items left without rows are dropped.
    """
    from recaudit.seeds import make_rng

    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise ValueError(f"n must be an integer >= 1, got {n!r}")
    present = np.flatnonzero(log.user_counts() > 0)
    if n >= len(present):
        return compact(log)
    rng = make_rng("sample_users", int(seed), int(n), log.fingerprint())
    chosen = np.zeros(log.n_users, dtype=bool)
    chosen[rng.choice(present, size=int(n), replace=False)] = True
    return compact(log.take(chosen[log.user]))


def k_core(log: Interactions, k: int, *, renumber: bool = True) -> Interactions:
    """The ``k``-core: iteratively drop users and items with fewer than ``k`` rows.

    The result is the largest sub-log in which every user and every item has at least ``k``
    rows (it may be empty).
    """
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    keep = np.ones(len(log), dtype=bool)
    while True:
        uc = np.bincount(log.user[keep], minlength=log.n_users)
        ic = np.bincount(log.item[keep], minlength=log.n_items)
        new = keep & (uc[log.user] >= k) & (ic[log.item] >= k)
        if new.sum() == keep.sum():
            break
        keep = new
    out = log.take(keep)
    return compact(out) if renumber else out
