"""JODIE's training plan: t-batches, buffer slots and gathers, computed once per fit (numba).

Training processes the log (rows in time order) in *groups* of consecutive rows, one optimiser
step each (the gradient truncation of JODIE's code: the embedding trajectory is differentiated
within a group and detached between groups). Inside a group the rows are scheduled in
*t-batches* (Kumar et al. 2019, §4.3): the level of row ``k`` is one more than the highest level
of the in-group rows it reads, so the rows of one level are independent and are processed as one
batch, and levels run in increasing order. Row ``k`` (user ``u``, item ``i``, the user's previous
item ``p``) reads

- ``u(t-)``: the state written by the user's previous row (or the state at the group's start),
- ``i(t-)``: the state written by the item's previous row (or the group's start state),
- ``p(t-)``: the state of item ``p`` written by the *latest row before k* that involves ``p``
  (used by the prediction, eq. 4).

Every read is a fixed slot of one buffer (see :class:`Plan`), so the computation equals
processing the rows one by one in time order, whatever the order within a level.

Group rules: ``"count"`` cuts the rows into groups of ``batch_size`` consecutive rows (the last
one shorter; ``_history.count_groups``); ``"timespan"`` follows the authors' code
(``tbatch_timespan``): the log's time range is divided by ``n_spans`` and a group closes at the
first row whose time exceeds the group's first time by more than that span (the row is part of
the closing group). The authors' code then drops the rows after the last closed group in each
epoch; we keep them as a final group (documented difference).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from recaudit._jit import njit
from recaudit.data import Interactions

__all__ = ["Plan", "timespan_groups", "make_plan", "previous_rows",
           "group_arrays", "t_batches"]


@njit(cache=True)
def _timespan_groups(times, span):  # pragma: no cover - numba
    n = len(times)
    out = np.empty(n + 1, np.int64)
    ng = 0
    out[0] = 0
    start = times[0] if n else 0.0
    for j in range(n):
        if times[j] - start > span:
            ng += 1
            out[ng] = j + 1
            start = times[j]
    if out[ng] != n:
        ng += 1
        out[ng] = n
    return out[:ng + 1]


def timespan_groups(times: np.ndarray, n_spans: int) -> np.ndarray:
    """Group starts by the authors' time-span rule (see module docstring)."""
    t = np.asarray(times, dtype=np.float64).view()
    t.flags.writeable = False  # logs' columns are read-only: one compiled kernel for both
    if len(t) == 0:
        return np.zeros(1, dtype=np.int64)
    span = (t[-1] - t[0]) / n_spans
    return _timespan_groups(t, span)


def previous_rows(codes: np.ndarray) -> np.ndarray:
    """For each row, the previous row with the same code (``-1`` if none); rows in time order."""
    order = np.argsort(codes, kind="stable")
    prev = np.full(len(codes), -1, np.int64)
    same = codes[order][1:] == codes[order][:-1]
    prev[order[1:][same]] = order[:-1][same]
    return prev


@dataclass(frozen=True)
class Plan:
    """Per-group schedule. Arrays are flat; ``*_ptr`` give each group's range.

    Buffer of group ``g`` (``n_ext = len(ext_users[g]) + len(ext_items[g])`` rows of width d):
    ``[user entry states | item entry states | one zero row | (u_new, i_new) per processed row]``
    so the outputs of processed row ``r`` sit at ``base + 2r`` and ``base + 2r + 1`` with
    ``base = n_ext + 1``. ``order`` lists the group's rows in processing order (by level, then
    time); ``iu``/``ii``/``ip`` are the buffer slots of ``u(t-)``, ``i(t-)`` and ``p(t-)`` of each
    processed row (``ip`` = the zero row when the user has no previous item); ``level_ptr`` cuts
    the processed rows into levels; ``fin_*`` say which buffer slot holds each user's / item's
    state at the end of the group.
    """

    group_ptr: np.ndarray
    order: np.ndarray
    iu: np.ndarray
    ii: np.ndarray
    ip: np.ndarray
    level_ptr: np.ndarray
    level_group_ptr: np.ndarray
    ext_users: np.ndarray
    ext_user_ptr: np.ndarray
    ext_items: np.ndarray
    ext_item_ptr: np.ndarray
    fin_user: np.ndarray
    fin_user_slot: np.ndarray
    fin_user_ptr: np.ndarray
    fin_item: np.ndarray
    fin_item_slot: np.ndarray
    fin_item_ptr: np.ndarray

    @property
    def n_groups(self) -> int:
        return len(self.group_ptr) - 1

    @property
    def n_levels(self) -> int:
        return len(self.level_ptr) - self.n_groups


@njit(cache=True)
def _plan(user, item, prev_item, gptr, n_users, n_items):  # pragma: no cover - numba
    n = len(user)
    ng = len(gptr) - 1
    last_u = np.full(n_users, -1, np.int64)
    stamp_u = np.full(n_users, -1, np.int64)
    last_i = np.full(n_items, -1, np.int64)
    stamp_i = np.full(n_items, -1, np.int64)
    xslot_u = np.full(n_users, -1, np.int64)
    xstamp_u = np.full(n_users, -1, np.int64)
    xslot_i = np.full(n_items, -1, np.int64)
    xstamp_i = np.full(n_items, -1, np.int64)
    level = np.zeros(n, np.int64)
    srcu = np.full(n, -1, np.int64)
    srci = np.full(n, -1, np.int64)
    srcp = np.full(n, -1, np.int64)
    pos = np.zeros(n, np.int64)
    order = np.empty(n, np.int64)
    iu = np.empty(n, np.int64)
    ii = np.empty(n, np.int64)
    ip = np.empty(n, np.int64)
    level_ptr = np.empty(n + ng, np.int64)
    level_gptr = np.zeros(ng + 1, np.int64)
    ext_u = np.empty(n, np.int64)
    ext_uptr = np.zeros(ng + 1, np.int64)
    ext_i = np.empty(2 * n, np.int64)
    ext_iptr = np.zeros(ng + 1, np.int64)
    fin_u = np.empty(n, np.int64)
    fin_us = np.empty(n, np.int64)
    fin_uptr = np.zeros(ng + 1, np.int64)
    fin_i = np.empty(n, np.int64)
    fin_is = np.empty(n, np.int64)
    fin_iptr = np.zeros(ng + 1, np.int64)
    nlp = 0
    nxu = 0
    nxi = 0
    nfu = 0
    nfi = 0
    for g in range(ng):
        s, e = gptr[g], gptr[g + 1]
        # levels (time order): one more than the highest in-group source
        n_lv = 0
        for k in range(s, e):
            u, i, p = user[k], item[k], prev_item[k]
            lv = 0
            if stamp_u[u] == g:
                srcu[k] = last_u[u]
                lv = max(lv, level[last_u[u]] + 1)
            else:
                srcu[k] = -1
            if stamp_i[i] == g:
                srci[k] = last_i[i]
                lv = max(lv, level[last_i[i]] + 1)
            else:
                srci[k] = -1
            srcp[k] = -1
            if p >= 0 and stamp_i[p] == g:
                srcp[k] = last_i[p]
                lv = max(lv, level[last_i[p]] + 1)
            level[k] = lv
            n_lv = max(n_lv, lv + 1)
            last_u[u] = k
            stamp_u[u] = g
            last_i[i] = k
            stamp_i[i] = g
        # counting sort by level -> processing positions
        cnt = np.zeros(n_lv + 1, np.int64)
        for k in range(s, e):
            cnt[level[k] + 1] += 1
        for lv in range(n_lv):
            cnt[lv + 1] += cnt[lv]
        for lv in range(n_lv + 1):
            level_ptr[nlp + lv] = cnt[lv]
        nlp += n_lv + 1
        level_gptr[g + 1] = nlp
        fill = cnt[:n_lv].copy()
        for k in range(s, e):
            r = fill[level[k]]
            fill[level[k]] += 1
            pos[k] = r
            order[s + r] = k
        # entry slots: users first, then items (including items read as p)
        nu = 0
        for k in range(s, e):
            u = user[k]
            if srcu[k] < 0:
                xslot_u[u] = nu
                xstamp_u[u] = g
                ext_u[nxu + nu] = u
                nu += 1
        ni = 0
        for k in range(s, e):
            i, p = item[k], prev_item[k]
            if p >= 0 and srcp[k] < 0 and xstamp_i[p] != g:
                xslot_i[p] = nu + ni
                xstamp_i[p] = g
                ext_i[nxi + ni] = p
                ni += 1
            if srci[k] < 0 and xstamp_i[i] != g:
                xslot_i[i] = nu + ni
                xstamp_i[i] = g
                ext_i[nxi + ni] = i
                ni += 1
        nxu += nu
        nxi += ni
        ext_uptr[g + 1] = nxu
        ext_iptr[g + 1] = nxi
        zero = nu + ni
        base = zero + 1
        for k in range(s, e):
            r = s + pos[k]
            su, si, sp = srcu[k], srci[k], srcp[k]
            iu[r] = base + 2 * pos[su] if su >= 0 else xslot_u[user[k]]
            ii[r] = base + 2 * pos[si] + 1 if si >= 0 else xslot_i[item[k]]
            if prev_item[k] < 0:
                ip[r] = zero
            elif sp >= 0:
                ip[r] = base + 2 * pos[sp] + 1
            else:
                ip[r] = xslot_i[prev_item[k]]
        for k in range(s, e):
            if last_u[user[k]] == k:
                fin_u[nfu] = user[k]
                fin_us[nfu] = base + 2 * pos[k]
                nfu += 1
            if last_i[item[k]] == k:
                fin_i[nfi] = item[k]
                fin_is[nfi] = base + 2 * pos[k] + 1
                nfi += 1
        fin_uptr[g + 1] = nfu
        fin_iptr[g + 1] = nfi
    return (order, iu, ii, ip, level_ptr[:nlp], level_gptr, ext_u[:nxu], ext_uptr,
            ext_i[:nxi], ext_iptr, fin_u[:nfu], fin_us[:nfu], fin_uptr, fin_i[:nfi],
            fin_is[:nfi], fin_iptr)


def make_plan(user: np.ndarray, item: np.ndarray, prev_item: np.ndarray, group_ptr: np.ndarray,
              n_users: int, n_items: int) -> Plan:
    """Build the :class:`Plan` of a log whose rows are in time order."""
    out = _plan(np.asarray(user, np.int64), np.asarray(item, np.int64),
                np.asarray(prev_item, np.int64), np.asarray(group_ptr, np.int64),
                int(n_users), int(n_items))
    return Plan(np.asarray(group_ptr, np.int64), *out)


@njit(cache=True)
def _t_batches(user, item, n_users, n_items):  # pragma: no cover - numba
    last_u = np.full(n_users, -1, np.int64)
    last_i = np.full(n_items, -1, np.int64)
    out = np.empty(len(user), np.int64)
    for k in range(len(user)):
        b = max(last_u[user[k]], last_i[item[k]]) + 1
        out[k] = b
        last_u[user[k]] = b
        last_i[item[k]] = b
    return out


def t_batches(train: Interactions) -> np.ndarray:
    """Global t-batch index of every row of ``train`` (rows in time order; §4.3's algorithm)."""
    return _t_batches(train.user.astype(np.int64), train.item.astype(np.int64), train.n_users,
                      train.n_items)


def group_arrays(plan: Plan, train: Interactions, prev_item: np.ndarray, du: np.ndarray,
                 di: np.ndarray) -> list[dict]:
    """Per-group arrays on the host, built once per fit (processing order throughout): the
    level boundaries, the rows' read slots ``iu``/``ii``/``ip`` in the group's own buffer
    layout (:class:`Plan`), the rows' codes, time differences and t-batch weights, the entry
    and final states' codes and slots; :mod:`._steps` takes several members' groups
    together."""
    groups = []
    for g in range(plan.n_groups):
        s, e = plan.group_ptr[g], plan.group_ptr[g + 1]
        rows = plan.order[s:e]
        lp = plan.level_ptr[plan.level_group_ptr[g]:plan.level_group_ptr[g + 1]]
        fu = slice(plan.fin_user_ptr[g], plan.fin_user_ptr[g + 1])
        fi = slice(plan.fin_item_ptr[g], plan.fin_item_ptr[g + 1])
        sizes = np.diff(lp)
        groups.append({
            "levels": np.ascontiguousarray(lp, dtype=np.int64),
            "rows": np.ascontiguousarray(rows, dtype=np.int64),
            "row_weight": np.repeat(1.0 / sizes, sizes).astype(np.float32),
            "iu": plan.iu[s:e], "ii": plan.ii[s:e], "ip": plan.ip[s:e],
            "users": train.user[rows].astype(np.int64),
            "items": train.item[rows].astype(np.int64),
            "prev": prev_item[rows].astype(np.int64),
            "deltas": np.stack([du[rows], di[rows]], 1).astype(np.float32),
            "ext_u": plan.ext_users[plan.ext_user_ptr[g]:plan.ext_user_ptr[g + 1]],
            "ext_i": plan.ext_items[plan.ext_item_ptr[g]:plan.ext_item_ptr[g + 1]],
            "fin_u": plan.fin_user[fu], "fin_u_slot": plan.fin_user_slot[fu],
            "fin_i": plan.fin_item[fi], "fin_i_slot": plan.fin_item_slot[fi],
        })
    return groups
