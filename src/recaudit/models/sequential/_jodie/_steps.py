"""JODIE's groups of several members taken together: the steps of a stack's epoch.

At step ``j`` of an epoch every member that has a ``j``-th group (:mod:`._plan`) trains on
it, and the members' groups are computed as one: one buffer holds every member's entry states,
one zero row and the rows' outputs; the rows are laid out *level by level* (t-batch level
``l`` of every member, then level ``l + 1``; a member with fewer levels drops out), so the
recurrence runs each level of all members as one batched computation
(:func:`~._rnn.cascade`), the losses of members whose groups have as many rows as one
pass (:class:`LossGroup`), and the states after the step return to every member's state rows
in one scatter.

**A member's numbers never depend on its neighbours.** Within a level a member's rows form
one block of ``pad(n)`` rows, ``n`` its rows at that level and ``pad`` a rule of the member
alone (the torch recurrence pads to multiples of :data:`~.._stack.ROWS`, the numba one not at
all): members whose blocks have as many rows run as one batched product whose slice is the
product the member has alone; padding rows read the zero row, nobody reads what they write,
and their gradients are zeros.

A loss pass holds the members whose groups have as many rows ``n``, each in its own processing
order and padded to ``lines(n)`` rows (:func:`~.._stack.lines`, a multiple of 16), so that every
member's part of every ``[K', lines(n), w]`` tensor of the pass starts on a 64-byte line, as a
tensor of its own does. The padding rows read the zero row and the member's own first static
rows; the products read each member's first ``n`` rows only (:class:`._model._FirstRows`) and
the losses sum them only, so a member's products and sums are those of its ``n`` rows alone, and
the padding's gradients are zeros. For the same reason every array of a step's plan starts on a
line (:class:`_Pack`). (A matrix product's sums can depend on where its operands start; before,
a stack's second member, its part of a pass of uneven groups a few bytes off a line, trained
otherwise than alone: issue 61, 104 of 7,836 queries' RBO differed between ``--stack 1`` and
``--stack 3``.) Every index is into the member's own part of a stacked table (state rows ``k
(n_users + n_items) + code``, static weights ``k n + code``).

The plan of an epoch depends on the set of members that train (a member that stopped early
leaves it); it is built on the host once for each such set and copied to the device in one
copy per dtype (:class:`_Pack`): a step then reads nothing back from the device.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from recaudit.models.sequential._course import StepLosses
from recaudit.models.sequential._jodie._rnn import (Cascade, LevelGroup, cascade, row_pad,
                                                    uses_numba)
from recaudit.models.sequential._stack import LINE, Members, index_tensor, lines

__all__ = ["Step", "LossGroup", "plan_steps", "StackEpoch", "group_losses", "initial_states",
           "step_buffer", "advance"]


@dataclass(frozen=True)
class LossGroup:
    """Members (stack positions) whose groups have ``rows`` rows each, their loss as one
    pass (``m``), each member's rows in its processing order and padded to ``width`` rows
    (:func:`~.._stack.lines`): buffer slots ``[K' width]`` of ``u(t-)``, ``j(t-)``, ``p(t-)``,
    ``u(t)``, ``j(t)`` (padding: the zero row); ``users`` and ``prev`` rows ``[K', width]`` of
    the stacked static tables (``p + 1``: 0 = none), ``items`` ``[K', width, 1]``, ``du``
    ``[K', width, 1]`` and the t-batch weights ``[K', width]`` (padding: zero)."""

    members: tuple[int, ...]
    m: Members
    rows: int
    width: int
    iu: torch.Tensor
    ii: torch.Tensor
    ip: torch.Tensor
    new_u: torch.Tensor
    new_i: torch.Tensor
    users: torch.Tensor
    prev: torch.Tensor
    items: torch.Tensor
    du: torch.Tensor
    weight: torch.Tensor


@dataclass(frozen=True)
class Step:
    """One step of the stack: its members (in the order of their losses), whether it is the
    epoch's first (entries read the initial vectors, rows ``k`` / ``K + k`` of
    ``[init_user ; init_item]``: ``entry_init``) or not (rows of the stacked state:
    ``entry_state``), the recurrence's plan, the loss passes and the final states' scatter
    (``fin_src`` buffer slots to ``fin_dst`` state rows)."""

    members: list[int]
    first: bool
    entry_init: torch.Tensor
    entry_state: torch.Tensor
    rnn: Cascade
    losses: list[LossGroup]
    fin_dst: torch.Tensor
    fin_src: torch.Tensor


class _Pack:
    """Host arrays gathered for one copy to the device per dtype, each array starting on a
    64-byte boundary of a tensor that torch allocated (a numpy array's memory is aligned to 16
    bytes only: where a view of it starts would depend on the heap)."""

    _DTYPES = {"i": np.int64, "f": np.float32}

    def __init__(self) -> None:
        self.parts: dict[str, list[np.ndarray]] = {"i": [], "f": []}
        self.size = {"i": 0, "f": 0}
        self.out: dict[str, torch.Tensor] = {}

    def add(self, a: np.ndarray, kind: str = "i") -> tuple[str, int, tuple[int, ...]]:
        dt = self._DTYPES[kind]
        a = np.ascontiguousarray(a, dtype=dt)
        ref = (kind, self.size[kind], a.shape)
        line = LINE // np.dtype(dt).itemsize
        gap = -a.size % line
        self.parts[kind] += [a.ravel(), np.zeros(gap, dt)]
        self.size[kind] += a.size + gap
        return ref

    def finish(self, device: torch.device) -> None:
        for kind, parts in self.parts.items():
            flat = torch.from_numpy(np.concatenate(parts) if parts
                                    else np.zeros(0, self._DTYPES[kind]))
            self.out[kind] = torch.empty(flat.shape, dtype=flat.dtype, device=device).copy_(flat)

    def __call__(self, ref: tuple[str, int, tuple[int, ...]]) -> torch.Tensor:
        kind, lo, shape = ref
        return self.out[kind][lo:lo + int(np.prod(shape, dtype=np.int64))].view(shape)


def plan_steps(groups: Sequence[Sequence[dict]], positions: Sequence[int], k: int,
               n_users: int, n_items: int, pad: Callable[[int], int],
               device: torch.device) -> list[Step]:
    """The steps of an epoch of members ``positions`` (of a stack of ``k``) whose groups
    (:func:`~._plan.group_arrays`) are ``groups[i]`` for member ``positions[i]``."""
    pack = _Pack()
    n_steps = max((len(g) for g in groups), default=0)
    raw = [_step([(p, gs[j]) for p, gs in zip(positions, groups, strict=True) if j < len(gs)],
                 j == 0, k, n_users, n_items, pad, pack) for j in range(n_steps)]
    pack.finish(device)
    return [build(pack, device) for build in raw]


def _step(here: list[tuple[int, dict]], first: bool, k: int, n_users: int, n_items: int,
          pad: Callable[[int], int], pack: _Pack) -> Callable[[_Pack, torch.device], Step]:
    n_state = n_users + n_items
    # entries: each member's users, then its items
    off, e = {}, 0
    ent_state, ent_init = [], []
    for p, g in here:
        nu, ni = len(g["ext_u"]), len(g["ext_i"])
        off[p] = e
        ent_state += [p * n_state + g["ext_u"], p * n_state + n_users + g["ext_i"]]
        ent_init += [np.full(nu, p, np.int64), np.full(ni, k + p, np.int64)]
        e += nu + ni
    zero, base = e, e + 1
    # rows, level by level; within a level, blocks of equal padded size together
    row_pos = {p: np.empty(len(g["iu"]), np.int64) for p, g in here}
    blk_ptr, blk_member, blk_start, blk_n = [0], [], [], []
    levels: list[list[list]] = []
    r = 0
    for lv in range(max(len(g["levels"]) - 1 for _, g in here)):
        blocks = sorted(((pad(int(g["levels"][lv + 1] - g["levels"][lv])), p,
                          int(g["levels"][lv]), int(g["levels"][lv + 1]))
                         for p, g in here if lv + 1 < len(g["levels"])), key=lambda b: b[0])
        level: list[list] = []
        for size, p, a, z in blocks:
            row_pos[p][a:z] = r + np.arange(z - a)
            blk_member.append(p)
            blk_start.append(r)
            blk_n.append(z - a)
            if level and level[-1][2] == size:
                level[-1][1] += size
                level[-1][3].append(p)
            else:
                level.append([r, r + size, size, [p]])
            r += size
        blk_ptr.append(len(blk_member))
        levels.append(level)
    n_rows = r

    def remap(p: int, g: dict, slots: np.ndarray) -> np.ndarray:
        n_ext = len(g["ext_u"]) + len(g["ext_i"])
        out = np.where(slots < n_ext, off[p] + slots, zero)
        proc = slots > n_ext
        q = slots[proc] - (n_ext + 1)
        out[proc] = base + 2 * row_pos[p][q // 2] + q % 2
        return out

    idx = np.full(2 * n_rows, zero, np.int64)
    deltas = np.zeros((n_rows, 2), np.float32)
    by_rows: dict[int, list[tuple[int, dict]]] = {}
    for p, g in here:
        pos = row_pos[p]
        idx[2 * pos], idx[2 * pos + 1] = remap(p, g, g["iu"]), remap(p, g, g["ii"])
        deltas[pos] = g["deltas"]
        by_rows.setdefault(len(pos), []).append((p, g))
    refs = {"entry_init": pack.add(np.concatenate(ent_init)),
            "entry_state": pack.add(np.concatenate(ent_state)),
            "idx": pack.add(idx), "deltas": pack.add(deltas, "f"),
            "fin_dst": pack.add(np.concatenate(
                [np.concatenate([p * n_state + g["fin_u"], p * n_state + n_users + g["fin_i"]])
                 for p, g in here])),
            "fin_src": pack.add(np.concatenate(
                [np.concatenate([remap(p, g, g["fin_u_slot"]), remap(p, g, g["fin_i_slot"])])
                 for p, g in here]))}
    losses = []
    for n, members in by_rows.items():
        w = lines(n)

        def cat(f, fill):
            """Each member's ``n`` values ``f(p, g)``, then ``w - n`` of ``fill(p)``."""
            parts = []
            for p, g in members:
                a = np.asarray(f(p, g))
                parts += [a, np.full((w - n, *a.shape[1:]), fill(p), a.dtype)]
            return np.concatenate(parts)

        def slots(f):
            return pack.add(cat(f, lambda p: zero))

        losses.append((tuple(p for p, _ in members), n, w, {
            "iu": slots(lambda p, g: remap(p, g, g["iu"])),
            "ii": slots(lambda p, g: remap(p, g, g["ii"])),
            "ip": slots(lambda p, g: remap(p, g, g["ip"])),
            "new_u": slots(lambda p, g: base + 2 * row_pos[p]),
            "new_i": slots(lambda p, g: base + 2 * row_pos[p] + 1),
            "users": pack.add(cat(lambda p, g: p * n_users + g["users"],
                                  lambda p: p * n_users).reshape(-1, w)),
            "prev": pack.add(cat(lambda p, g: p * (n_items + 1) + g["prev"] + 1,
                                 lambda p: p * (n_items + 1)).reshape(-1, w)),
            "items": pack.add(cat(lambda p, g: g["items"], lambda p: 0).reshape(-1, w, 1)),
            "du": pack.add(cat(lambda p, g: g["deltas"][:, 0], lambda p: 0.0)
                           .reshape(-1, w, 1), "f"),
            "weight": pack.add(cat(lambda p, g: g["row_weight"], lambda p: 0.0)
                               .reshape(-1, w), "f")}))
    every = list(range(k))

    def build(pk: _Pack, device: torch.device) -> Step:
        flat_idx, flat_deltas = pk(refs["idx"]), pk(refs["deltas"])
        lvls = [[LevelGroup(lo, hi, size, None if ps == every else index_tensor(ps, device),
                            flat_idx[2 * lo:2 * hi], flat_deltas[lo:hi].view(-1, size, 2))
                 for lo, hi, size, ps in level] for level in levels]
        rnn = Cascade(n_rows, flat_idx, flat_deltas, np.asarray(blk_ptr, np.int64),
                      np.asarray(blk_member, np.int64), np.asarray(blk_start, np.int64),
                      np.asarray(blk_n, np.int64), lvls)
        passes = [LossGroup(ps, Members(None if list(ps) == every else ps, None, device), n, w,
                            **{name: pk(ref) for name, ref in r.items()})
                  for ps, n, w, r in losses]
        return Step([p for lg in passes for p in lg.members], first, pk(refs["entry_init"]),
                    pk(refs["entry_state"]), rnn, passes, pk(refs["fin_dst"]),
                    pk(refs["fin_src"]))

    return build


def initial_states(net: Any, n_users: int) -> torch.Tensor:
    """Every member's users' and items' dynamic embeddings at the start of an epoch, the
    initial vectors as they are now (detached): ``[K, n_users + n_items, d]``."""
    k, d = net.init_user.shape
    with torch.no_grad():
        return torch.cat([net.init_user[:, None].expand(k, n_users, d),
                          net.init_item[:, None].expand(k, net.n_items, d)], 1)


def step_buffer(net: Any, step: Step, states: torch.Tensor, use_numba: bool) -> torch.Tensor:
    """The buffer of ``step`` (:func:`~._rnn.cascade`) from ``states`` (the epoch's
    first step: the initial vectors, with their gradient)."""
    if step.first:
        entry = torch.cat([net.init_user, net.init_item]).index_select(0, step.entry_init)
    else:
        entry = states.view(-1, states.shape[2]).index_select(0, step.entry_state)
    w, b = net.cell_weights()
    return cascade(entry, w, b, step.rnn, use_numba)


def advance(states: torch.Tensor, step: Step, buf: torch.Tensor) -> None:
    """The step's users and items run on from their states after the step."""
    states.view(-1, states.shape[2]).index_copy_(0, step.fin_dst,
                                                 buf.detach().index_select(0, step.fin_src))


def group_losses(net: Any, buf: torch.Tensor, lg: LossGroup, config: Any) -> torch.Tensor:
    """The loss (eq. 5, the model's ``loss_reduction`` and ``detach_targets``) of each member
    of a loss pass ``[K']``, before division by the group's size: the sums over each member's
    ``lg.rows`` rows (its padding rows are computed and left out)."""
    k, n, w, d = lg.items.shape[0], lg.rows, lg.width, buf.shape[1]

    def rows(at: torch.Tensor) -> torch.Tensor:
        return buf.index_select(0, at).view(k, w, d)

    u_prev, i_prev, p_dyn = rows(lg.iu), rows(lg.ii), rows(lg.ip)
    u_new, i_new = rows(lg.new_u), rows(lg.new_i)
    if config.detach_targets:
        u_ref, i_ref = u_prev.detach(), i_prev.detach()
    else:
        u_ref, i_ref = u_prev, i_prev
    u_proj = net.project_users(u_prev, lg.du, lg.m, n)
    pred = net.predict_items(u_proj, lg.users, p_dyn, lg.prev, lg.m, n)
    one_hot = buf.new_zeros(k, w, net.n_items).scatter_(2, lg.items, 1.0)
    target = torch.cat([i_ref, one_hot], 2)  # (F.one_hot checks its input: a device sync)
    lam_u, lam_i = config.lambda_user, config.lambda_item
    if config.loss_reduction == "tbatch-mean":  # per t-batch nn.MSELoss, summed
        per_row = (((pred - target) ** 2).mean(2) + lam_u * ((u_new - u_ref) ** 2).mean(2)
                   + lam_i * ((i_new - i_ref) ** 2).mean(2))
        return (per_row * lg.weight)[:, :n].sum(1)
    return (((pred - target) ** 2)[:, :n].sum((1, 2))
            + lam_u * ((u_new - u_ref) ** 2)[:, :n].sum((1, 2))
            + lam_i * ((i_new - i_ref) ** 2)[:, :n].sum((1, 2)))


class StackEpoch:
    """An epoch of JODIE's stack: each step takes the step's group of every member together
    (:func:`plan_steps`, planned once per set of members); the members' dynamic embeddings
    are one tensor ``[K, n_users + n_items, d]`` (:func:`initial_states`)."""

    def __init__(self, stack: Any, active: Sequence[Any]) -> None:
        first = active[0]
        net = stack.net
        self.net, self.config = net, first.config
        self.n_users = first.train.n_users
        self.use_numba = uses_numba(first.model._rnn_impl, first.device)
        key = (tuple(c.member for c in active), self.use_numba)
        if key not in stack.data:
            stack.data[key] = plan_steps([c.groups for c in active], key[0], net.size,
                                         self.n_users, net.n_items, row_pad(self.use_numba),
                                         first.device)
        self.steps: list[Step] = stack.data[key]
        self.states = initial_states(net, self.n_users)

    def __iter__(self) -> Iterator[Step]:
        return iter(self.steps)

    def objectives(self, step: Step, tag: int) -> StepLosses:
        buf = step_buffer(self.net, step, self.states, self.use_numba)
        losses = [group_losses(self.net, buf, lg, self.config) for lg in step.losses]
        total = losses[0] if len(losses) == 1 else torch.cat(losses)
        if self.config.loss_reduction == "group-sum":
            means = [loss / lg.rows for loss, lg in zip(losses, step.losses, strict=True)]
            mean = means[0] if len(means) == 1 else torch.cat(means)
        else:
            mean = total
        return StepLosses(mean, step.members, total.detach(), {-1: buf})

    def after_update(self, step: Step, losses: Any) -> None:
        advance(self.states, step, losses.carries[-1])

    def state(self, course: Any) -> torch.Tensor:
        return self.states
