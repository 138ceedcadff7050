"""Packed sequences of a stack's members as padded levels: one batched GRU for all of them.

A group of LatentCross's whole-history training (:mod:`.._history`) is a packed batch: its
users' sequences sorted by decreasing length, level ``t`` holding the ``b_t`` sequences longer
than ``t`` (rows ``0 .. b_t - 1``, each row's state the row of the level before), the rows of a
level independent. The members of a stack hold groups of other layouts (their logs differ by a
few rows). To run every member's recurrence at once, level by level, each member's level ``t``
is padded to ``w_t = ceil(b_t / G) G`` rows (``G =`` :data:`LEVEL_ROWS`), a width that depends
on the member alone, and the members whose widths agree at a level run as one batched product
``h W_hh^T`` and one set of gate operations (:func:`.._stack.gru_cell`); members whose widths
differ at a level (rare: their groups differ by a row or two) run in groups of equal width.
A member's slice of every product has the shape it has alone, so its numbers do not depend on
its neighbours (:mod:`.._stack`): a padding row holds the member's own finite values (its state
and input rows repeated) and nothing reads it, so its gradient is zero; a member whose levels
are over while others run on is carried along at their width, its rows again unread. The
backward pass adds a member's gradients in the order it adds them alone: a level always reads
the state through a view (``h[:, :W]``, or a group's rows), so the cell's two uses of the state
sum before they meet its other use (the rows read as inputs states), and what other members'
groups add to it is zero.

Layout: per member ``[h0 (W_0 rows); level 0 (W_0); level 1 (W_1); ...]`` with ``W_t`` the
widest member's width at level ``t``, ``T`` rows in all; a member's packed element
``(t, i)`` reads its input state from row ``i`` of the part before level ``t`` and its output
is row ``i`` of level ``t``. The input projections ``x W_ih^T + b_ih`` of all rows are one
batched product over each member's own packed rows, gathered into the level layout once.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch
from torch import _VF
from torch.nn import functional as F

from recaudit.models.sequential import _stack as stk

__all__ = ["LEVEL_ROWS", "LevelPlan", "NativePlan", "plan_packed", "run_packed"]

#: a member's level of ``b`` rows runs padded to a multiple of this many rows
LEVEL_ROWS = 8


def _width(b: np.ndarray) -> np.ndarray:
    return -(-b // LEVEL_ROWS) * LEVEL_ROWS


@dataclass(frozen=True)
class LevelPlan:
    """Members' packed batches as padded levels (see the module docstring), on a device.

    ``levels``: per level, its width ``W_t`` and its groups ``(members, width)`` (``members``:
    positions in the pass, ``None``: all of them); ``gather [K ΣW]``: each level row's packed
    row in ``[K n]`` (member ``k``'s rows at ``k n``); ``h0 [K W_0]``: each initial row's row of
    the state; ``before [K n]``: each packed element's input state in ``[K T]``; ``finals
    [F]``: each real sequence's last output in ``[K T]`` and ``rows [F]`` its row of the
    state."""

    levels: list[tuple[int, list[tuple[torch.Tensor | None, int]]]]
    gather: torch.Tensor
    h0: torch.Tensor
    before: torch.Tensor
    finals: torch.Tensor
    rows: torch.Tensor


@dataclass(frozen=True)
class NativePlan:
    """Members' packed batches for the fused kernel, one call per member: each member's
    ``(batch_sizes (host), rows of the state, before)`` with ``before [n]`` each element's
    input state in ``[h0 (one row per sequence); outputs]``; ``rows [F]``: every member's
    sequences' rows of the state, member after member."""

    members: list[tuple[torch.Tensor, torch.Tensor, torch.Tensor]]
    rows: torch.Tensor


def plan_packed(batch_sizes: Sequence[np.ndarray], state_rows: Sequence[np.ndarray], n: int,
                device: torch.device, recurrence: str) -> LevelPlan | NativePlan:
    """The plan of ``K`` members' packed batches of ``n`` rows each (member ``k``:
    ``batch_sizes[k]``, decreasing; its sequences' rows of the state ``state_rows[k]``) for
    ``recurrence`` (``"native"`` or ``"batched"``, resolved)."""
    if recurrence == "batched":
        return _plan_levels(batch_sizes, state_rows, n, device)
    members = []
    for b, rows in zip(batch_sizes, state_rows, strict=True):
        b = np.ascontiguousarray(b, np.int64)
        level = np.repeat(np.arange(len(b)), b)
        i = np.arange(n) - np.repeat(np.concatenate([[0], np.cumsum(b)[:-1]]), b)
        prev = np.concatenate([[0], np.cumsum(b)[:-2]])            # level t - 1's first row
        before = np.where(level == 0, i, len(rows) + prev[np.maximum(level - 1, 0)] + i)
        members.append((torch.as_tensor(b), torch.as_tensor(np.asarray(rows, np.int64)).to(device),
                        torch.as_tensor(before).to(device)))
    return NativePlan(members, torch.cat([r for _, r, _ in members]))


def run_packed(gru: stk.Recurrent, x: torch.Tensor, state: torch.Tensor,
               plan: LevelPlan | NativePlan, m: stk.Members
               ) -> tuple[torch.Tensor, torch.Tensor]:
    """The GRU ``gru`` (one layer) of members ``m`` over their packed inputs ``x [K, n, in]``
    from the states ``state [R, H]`` (rows named by the plan): ``(each element's input state
    [K, n, H], each sequence's final state [F, H])``, in the order of ``plan.rows``."""
    if gru.mode != "GRU" or gru.num_layers != 1:
        raise NotImplementedError("packed batches are run by one-layer GRUs here")
    if isinstance(plan, LevelPlan):
        return _run_levels(gru, x, state, plan, m)
    befores, finals = [], []
    for xk, weights, (sizes, rows, before) in zip(x.unbind(0), gru.weights(m), plan.members,
                                                  strict=True):
        h0 = state.index_select(0, rows)
        out, hn = _VF.gru(xk, sizes, h0.unsqueeze(0), weights, gru.bias, 1, 0.0, gru.training,
                          False)
        befores.append(torch.cat([h0, out]).index_select(0, before))
        finals.append(hn[0])
    return stk.stacked(befores), finals[0] if len(finals) == 1 else torch.cat(finals)


def _plan_levels(batch_sizes: Sequence[np.ndarray], state_rows: Sequence[np.ndarray], n: int,
                 device: torch.device) -> LevelPlan:
    k = len(batch_sizes)
    bs = [np.asarray(b, np.int64) for b in batch_sizes]
    n_levels = max(len(b) for b in bs)
    w = np.zeros((k, n_levels), np.int64)
    for g, b in enumerate(bs):
        w[g, :len(b)] = _width(b)
    widths = w.max(0)
    w0 = int(widths[0])
    start = w0 + np.concatenate([[0], np.cumsum(widths)[:-1]])    # each level's first row
    total = w0 + int(widths.sum())
    cum = np.concatenate([[0], np.cumsum(widths)])
    gather = np.repeat(np.arange(k, dtype=np.int64) * n, int(widths.sum())).reshape(k, -1)
    h0 = np.empty((k, w0), np.int64)
    before = np.empty((k, n), np.int64)
    finals, rows = [], []
    for g, b in enumerate(bs):
        rows_g = np.asarray(state_rows[g], np.int64)
        level = np.repeat(np.arange(len(b)), b)                  # each packed element's level
        i = np.arange(n) - np.repeat(np.concatenate([[0], np.cumsum(b)[:-1]]), b)
        gather[g, cum[level] + i] = g * n + np.arange(n)
        h0[g] = rows_g[0]
        h0[g, :len(rows_g)] = rows_g
        before[g] = g * total + np.where(level == 0, i, start[np.maximum(level - 1, 0)] + i)
        last = np.bincount(i, minlength=len(rows_g)) - 1          # each sequence's last level
        finals.append(g * total + start[last] + np.arange(len(rows_g)))
        rows.append(rows_g)
    levels: list[tuple[int, list[tuple[torch.Tensor | None, int]]]] = []
    for t in range(n_levels):
        active = np.flatnonzero(w[:, t])
        own = np.unique(w[active, t])
        if len(own) == 1:
            levels.append((int(widths[t]), [(None, int(own[0]))]))
        else:
            levels.append((int(widths[t]), [
                (torch.as_tensor(active[w[active, t] == x]).to(device), int(x)) for x in own]))

    def dev(a):
        return torch.as_tensor(np.ascontiguousarray(a).reshape(-1)).to(device)

    return LevelPlan(levels, dev(gather), dev(h0), dev(before), dev(np.concatenate(finals)),
                     dev(np.concatenate(rows)))


def _run_levels(gru: stk.Recurrent, x: torch.Tensor, state: torch.Tensor, plan: LevelPlan,
                m: stk.Members) -> tuple[torch.Tensor, torch.Tensor]:
    k, n, _ = x.shape
    hid = gru.hidden_size

    def take(name: str) -> torch.Tensor:
        return m.take(getattr(gru, f"{name}_l0"))

    # w_hh [K, 3H, H] is transposed in each product (as alone: a member's layout its own)
    w_ih, w_hh = take("weight_ih").transpose(1, 2), take("weight_hh")
    b_hh = take("bias_hh").unsqueeze(1) if gru.bias else None
    proj = torch.baddbmm(take("bias_ih").unsqueeze(1), x, w_ih) if gru.bias \
        else torch.bmm(x, w_ih)
    gi = proj.reshape(k * n, -1).index_select(0, plan.gather).view(k, -1, proj.shape[-1]) \
        .split([width for width, _ in plan.levels], dim=1)
    h = state.index_select(0, plan.h0).view(k, -1, hid)
    outs = [h]
    for t, (width, groups) in enumerate(plan.levels):
        if groups[0][0] is None:
            # always a view: the cell's two uses of h sum before they meet h's other use
            h = stk.gru_cell(gi[t], h[:, :width], w_hh.transpose(1, 2), b_hh)
        else:
            new = h.new_zeros(k, width, hid)
            for idx, own in groups:
                assert idx is not None
                y = stk.gru_cell(gi[t].index_select(0, idx)[:, :own],
                                 h.index_select(0, idx)[:, :own],
                                 w_hh.index_select(0, idx).transpose(1, 2),
                                 None if b_hh is None else b_hh.index_select(0, idx))
                new = new.index_copy(0, idx, F.pad(y, (0, 0, 0, width - own)))
            h = new
        outs.append(h)
    flat = torch.cat(outs, dim=1).reshape(-1, hid)
    return flat.index_select(0, plan.before).view(k, n, hid), flat.index_select(0, plan.finals)
