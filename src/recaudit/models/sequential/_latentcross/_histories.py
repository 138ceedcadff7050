"""LatentCross over whole histories in a stack: a step's groups of every member as one pass.

With ``samples = "history"`` (:mod:`.._history`) a member's mini-batches are groups of its log
in time order and each user's GRU state runs on from one group to the next. At step ``j`` the
members of a stack take their ``j``-th groups together: the members whose groups have as many
rows ``n`` form one *pass* when ``n`` is a multiple of 16, so that every member's part of the
pass starts on a 64-byte line as a tensor of its own does (:func:`~.._stack.pass_key`; other
counts, as the last groups' usually are, take a pass per member). A pass gathers its members'
inputs in one embedding look-up, draws their dropout masks at once (a member's counters are its
own, so its masks are those it draws alone), runs their GRUs (:func:`._levels.run_packed`: each
member's fused kernel with ``recurrence = "native"``, every member level by level with
``"batched"``) and computes their head, output layer and cross-entropy as batched products over
each member's own ``n`` rows, each member's loss its mean over them. The members' user states
are one tensor ``[K U, H]`` (member ``k``'s user ``u`` at row ``k U + u``); a pass reads its
members' rows and, after the optimiser step, writes their groups' final states back (detached).
A step's passes are planned once per stack and set of members, on the device.

The states after an epoch (validation, ``patience``) and those a fitted model ranks from (after
training, under each member's final or best weights) are one evaluation pass of all members
over their histories (:meth:`HistoryStack.states`).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch.nn import functional as F

from recaudit.data import Interactions
from recaudit.errors import DataError
from recaudit.models.sequential import _stack as stk
from recaudit.models.sequential._course import Course, Stack, StepLosses
from recaudit.models.sequential._history import count_groups, group_layouts, row_gaps
from recaudit.models.sequential._latentcross._levels import (LevelPlan, NativePlan, plan_packed,
                                                            run_packed)

__all__ = ["np_buckets", "HistoryGroup", "history_groups", "HistoryStack", "HistoryCourse"]


def np_buckets(delta: np.ndarray, n: int) -> np.ndarray:
    """``min(n - 1, floor(log2(1 + max(Δ, 0))))`` of float64 gaps, as int64."""
    return np.minimum(n - 1, np.floor(np.log2(1.0 + np.maximum(delta, 0.0)))).astype(np.int64)


@dataclass(frozen=True)
class HistoryGroup:
    """One group of a member's log, on the host: its log ``rows`` in packed order
    (:class:`.._history.GroupLayout`), their ``items`` and gap ``buckets``, the group's
    ``users`` in sequence order and its ``batch_sizes``."""

    rows: np.ndarray
    items: np.ndarray
    buckets: np.ndarray
    users: np.ndarray
    batch_sizes: np.ndarray


def history_groups(train: Interactions, batch_size: int, n_buckets: int) -> list[HistoryGroup]:
    """The groups of ``batch_size`` consecutive rows of ``train`` (rows in time order)."""
    buckets = np_buckets(row_gaps(train.user, train.timestamp), n_buckets)
    return [HistoryGroup(lay.rows, train.item[lay.rows].astype(np.int64), buckets[lay.rows],
                         lay.users.astype(np.int64), lay.batch_sizes)
            for lay in group_layouts(train.user, count_groups(len(train), batch_size))]


@dataclass(frozen=True)
class Pass:
    """Members (stack positions) whose groups at a step have ``n`` rows each: their items
    and buckets ``[K, n]`` on the device, their GRUs' plan (:mod:`._levels`) and their log
    rows ``[K, n]`` on the host."""

    members: tuple[int, ...]
    n: int
    items: torch.Tensor
    buckets: torch.Tensor
    plan: LevelPlan | NativePlan
    rows: np.ndarray


def forward(net: Any, p: Pass, state: torch.Tensor, m: stk.Members
            ) -> tuple[torch.Tensor, torch.Tensor]:
    """``o = (1 + w^out) ⊙ h`` ``[K, n, H]`` of every row of pass ``p`` (``h``: the row's
    user's state before it) and the final states of its groups' users (``p.plan.rows``)."""
    before, finals = run_packed(net.gru, net.inputs(p.items, p.buckets, m), state, p.plan, m)
    return before * (1.0 + net.ctx_out(p.buckets, m)), finals


def losses(net: Any, p: Pass, state: torch.Tensor, m: stk.Members
           ) -> tuple[torch.Tensor, torch.Tensor]:
    """Each member's mean cross-entropy ``[K]`` over its group's rows, and the final states."""
    o, finals = forward(net, p, state, m)
    scores = stk.bmm_out(net.head(o, m), *net.output(m))
    ce = F.cross_entropy(scores.view(-1, scores.shape[-1]), p.items.view(-1), reduction="none")
    return ce.view(len(p.members), p.n).sum(1) / p.n, finals


class HistoryStack:
    """The groups of a stack's members (``groups[k]``: member ``k``'s) over ``n_users`` users,
    and their passes (planned on first use, kept)."""

    def __init__(self, groups: Sequence[Sequence[HistoryGroup]], n_users: int, hidden: int,
                 device: torch.device, recurrence: str) -> None:
        self.groups = [list(g) for g in groups]
        self.n_users, self.hidden, self.device = n_users, hidden, device
        self.recurrence = stk.resolve_recurrence(recurrence, device)
        self._passes: dict[tuple[int, tuple[int, ...]], list[Pass]] = {}
        self.members: tuple[int, ...] = ()     # the members the current epoch trains
        self.end: torch.Tensor | None = None   # their states after the epoch (validation)
        self.fitted: torch.Tensor | None = None  # every member's states after training

    def n_steps(self, members: Sequence[int]) -> int:
        return max(len(self.groups[k]) for k in members)

    def zeros(self) -> torch.Tensor:
        """Every member's user states, zero: ``[K U, H]``."""
        return torch.zeros(len(self.groups) * self.n_users, self.hidden, device=self.device)

    def passes(self, j: int, members: Sequence[int]) -> list[Pass]:
        """The passes of step ``j`` of ``members``: those with a ``j``-th group, by its size
        (:func:`~.._stack.pass_key`: members whose parts of the pass stay on 64-byte lines)."""
        key = (j, tuple(members))
        if key not in self._passes:
            by_size: dict[int | tuple[int, int], list[int]] = {}
            for k in members:
                if j < len(self.groups[k]):
                    by_size.setdefault(stk.pass_key(len(self.groups[k][j].rows), k),
                                       []).append(k)
            self._passes[key] = [self._plan(j, ks) for ks in by_size.values()]
        return self._passes[key]

    def _plan(self, j: int, ks: list[int]) -> Pass:
        gs = [self.groups[k][j] for k in ks]
        n = len(gs[0].rows)
        plan = plan_packed([g.batch_sizes for g in gs],
                           [k * self.n_users + g.users for k, g in zip(ks, gs, strict=True)], n,
                           self.device, self.recurrence)

        def dev(parts):
            return torch.as_tensor(np.stack(parts)).to(self.device)

        return Pass(tuple(ks), n, dev([g.items for g in gs]), dev([g.buckets for g in gs]), plan,
                    np.stack([g.rows for g in gs]))

    def states(self, net: Any, members: Sequence[int], rows_out: bool = False
               ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Every member's user states ``[K U, H]`` after its whole history under ``net``
        (evaluation mode, no gradient; members not in ``members`` zero) and, with
        ``rows_out`` (a stack of one), each log row's ``o`` in log order."""
        net.eval()
        members = tuple(members)
        state = self.zeros()
        rows = None
        if rows_out:
            rows = torch.empty(sum(len(g.rows) for g in self.groups[0]), self.hidden,
                               device=self.device)
        with torch.no_grad():
            for j in range(self.n_steps(members)):
                for p in self.passes(j, members):
                    o, finals = forward(net, p, state, stk.Members.of(net, p.members))
                    state.index_copy_(0, p.plan.rows, finals)
                    if rows is not None:
                        rows[torch.as_tensor(p.rows.reshape(-1)).to(self.device)] = \
                            o.reshape(-1, self.hidden)
        return state, rows


class HistoryEpoch:
    """An epoch of a stack over whole histories: every member's states from zero, a step's
    passes (:meth:`HistoryStack.passes`) one batched computation each."""

    def __init__(self, stack: Stack, active: Sequence[Any]) -> None:
        self.stack = stack
        self.data: HistoryStack = stack.data
        self.members = tuple(sorted(c.member for c in active))
        self.data.members, self.data.end = self.members, None
        self.users = self.data.zeros()   # every member's user states

    def __iter__(self) -> Iterator[list[Pass]]:
        for j in range(self.data.n_steps(self.members)):
            yield self.data.passes(j, self.members)

    def objectives(self, step: list[Pass], tag: int) -> StepLosses:
        net = self.stack.net
        out, tallies, carries = [], [], {}
        for p in step:
            loss, finals = losses(net, p, self.users, stk.Members.step(net, p.members, tag))
            out.append(loss)
            tallies.append(loss.detach() * p.n)
            carries[p.members[0]] = finals
        cat = (lambda t: t[0]) if len(out) == 1 else torch.cat
        return StepLosses(cat(out), [k for p in step for k in p.members], cat(tallies), carries)

    def after_update(self, step: list[Pass], done: StepLosses) -> None:
        """The groups' users run on from their states after the step (detached)."""
        for p in step:
            self.users.index_copy_(0, p.plan.rows, done.carries[p.members[0]].detach())

    def state(self, course: Any) -> None:
        return None


class HistoryCourse(Course):
    """LatentCross with ``samples="history"`` in the training loop: the mini-batches are the
    log's groups in time order, each user's state runs on from group to group (detached at
    group boundaries) and restarts from zero every epoch; validation and the fitted model read
    every user's state after the whole history (:meth:`HistoryStack.states`)."""

    shared: HistoryStack
    groups: list[HistoryGroup]

    def _prepare(self) -> int:
        train, model = self.train, self.model
        if len(train) == 0:
            raise DataError(f"{self.name}: the training log is empty", source=train.name)
        self.groups = history_groups(train, self.config.batch_size, self.config.time_buckets)
        model.n_items_, model.n_users_ = train.n_items, train.n_users
        model._train_ = train
        return len(train)

    def _batch_bytes(self) -> int:
        cfg = self.config
        rows = max(len(g.rows) for g in self.groups)
        return 4 * (3 * rows * self.train.n_items + 32 * rows * cfg.hidden_dim
                    + self.train.n_users * cfg.hidden_dim)

    @classmethod
    def stack(cls, courses: Sequence[Any]) -> Stack:
        net = cls.network(courses)
        first = courses[0]
        data = HistoryStack([c.groups for c in courses], first.train.n_users,
                            first.config.hidden_dim, first.device, first.config.recurrence)
        for c in courses:
            c.shared = data
        return Stack(list(courses), net, data)

    @classmethod
    def epoch(cls, stack: Stack, active: Sequence[Any], epoch: int) -> HistoryEpoch:
        return HistoryEpoch(stack, active)

    def _fitted(self, net: Any, states: torch.Tensor) -> None:
        u = self.train.n_users
        net.eval()
        self.model._fitted_state(net, states[self.member * u:(self.member + 1) * u].clone(),
                                 self.device)

    def validate(self) -> float:
        data = self.shared
        if data.end is None:       # the epoch's members' states, once per epoch
            data.end, _ = data.states(self.net, data.members)
        self._fitted(self.member_network(), data.end)
        return super().validate()

    def finish(self, state: Any) -> None:
        data = self.shared
        if data.fitted is None:    # every member's, once (their final or best weights loaded)
            data.fitted, _ = data.states(self.net, range(len(data.groups)))
        self._fitted(self.member_network(share=False), data.fitted)
