"""JODIE (Kumar, Zhang, Leskovec. *Predicting Dynamic Embedding Trajectory in Temporal
Interaction Networks.* KDD 2019).

Every user and item has a dynamic embedding (``d``) and a static one-hot embedding. An
interaction ``(u, j, t)`` updates both with coupled RNNs (eq. 1-2; tanh RNN cells, embeddings
L2-normalised as in the authors' code):

    u(t) = norm(tanh(W_u [u(t-); j(t-); Δ_u] + b_u))        Δ_u: time since u's previous event
    j(t) = norm(tanh(W_i [j(t-); u(t-); Δ_j] + b_i))        Δ_j: time since j's previous event

Before the interaction the model *projects* the user embedding to time ``t`` (eq. 3) and
predicts the embedding of the item it will interact with (eq. 4):

    û(t) = (1 + w) ⊙ u(t-),  w = W_p Δ_u
    ĵ(t) = W_1 û + W_2 ū + W_3 p(t-) + W_4 p̄ + b         (p: the user's previous item)

Loss (eq. 5): ``||ĵ - [j(t-) ; j̄]||² + λ_U ||u(t) - u(t-)||² + λ_I ||j(t) - j(t-)||²``, summed
over the rows of a group and divided by the group's size (``loss_reduction="group-sum"``).
``"tbatch-mean"`` is the authors' code: each term is a mean squared error (averaged over the
t-batch's rows and the vector's dimensions, ``nn.MSELoss``) and the t-batches' losses are
summed over the group without further division. ``detach_targets=True`` stops the gradient at
``j(t-)`` in the first term and at ``u(t-)``, ``j(t-)`` in the others, as the authors' code does
(their ``.detach()``); the default keeps it (the formula as printed).

Training (see :mod:`._plan`): the log, in time order, is cut into groups
(``grouping="count"``: ``batch_size`` consecutive rows; ``"timespan"``: the authors'
``tbatch_timespan`` rule with ``n_spans`` spans), one Adam step each. Within a group the
embedding trajectory is differentiated end to end (the coupled updates are *not* truncated);
between groups it is detached — the authors' gradient truncation. Rows of a group are computed
in t-batches (§4.3), with exactly the reads of a row-by-row pass in time order. Dynamic
embeddings restart from learned initial vectors every epoch; the initial vectors receive
gradient only through the first group of an epoch (later groups read detached states).

Implementation: the schedule is computed once per fit (numba); each step's states live in one
preallocated buffer; the recurrence is one autograd node whose backward is written out
(``_rnn._Cascade``: reverse t-batch order, ``d/dz tanh``, ``d/dx x/||x||``), so memory
and time per group are linear in its rows — no copy of the user/item state per t-batch.
Prediction and loss are batched over the whole group. In a stack the members' groups of a step
are one computation, each member's numbers those it has alone (:mod:`._steps`).
Compared with recaudit 0.1 (one autograd copy of the whole state per run of rows with the same
global t-batch index, ~100x slower), results agree to float rounding when the groups agree; the
one semantic difference: 0.1 read ``p(t-)`` from the state before the current run, we read the
state after every earlier row (exact time order).

Ranking (as in the paper): for a query (user ``u`` at time ``t``, last context item ``p``),
every item ``j`` is scored by ``-||ĵ(t) - [j ; j̄]||²`` with the embeddings at the end of
training; users or items never seen keep the initial embedding. Time differences are divided
by the standard deviation of the training ``Δ_u`` (as the authors' code scales them).

Defaults: d 128 (Oh et al. 2022 §5; paper 128), lr 0.001, λ_U = λ_I = 1, 50 epochs, groups of
512 rows.

TracIn (Oh et al. 2022's ``tracin`` perturbations): fitted with ``checkpoint_every=T``, the
model keeps its weights every ``T`` epochs and gives the prediction layer's per-example
gradients over a replay of the log (:mod:`._tracin`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

import numpy as np
import torch
from torch import nn

from recaudit.data import Interactions, Queries
from recaudit.errors import DataError
from recaudit.models.sequential._history import count_groups, train_last_time
from recaudit.models.sequential._jodie._plan import (Plan, group_arrays, make_plan,
                                                     previous_rows, timespan_groups)
from recaudit.models.sequential._jodie._steps import StackEpoch
from recaudit.models.sequential._jodie._tracin import factor_stream, gradients
from recaudit.models.sequential import _stack as stk
from recaudit.models.sequential._nn import SequenceNet
from recaudit.models._registry import register
from recaudit.models.sequential._base import SequentialRecommender, fit_stack
from recaudit.models.sequential._course import Course, Stack
from recaudit.models.sequential._config import JODIEConfig

__all__ = ["JODIE"]

class _FirstRows(torch.autograd.Function):
    """``x[:, :n] W^T (+ b)`` into rows ``[K', w, out]`` whose last ``w - n`` rows are zeros
    (``x [K', w, in]``: each member's rows padded to whole lines, ``W [K', out, in]``,
    ``b [K', out]`` or ``None``), forward and backward with the products and sums
    :class:`~.._stack.Linear` and autograd compute on the ``n`` rows alone (``baddbmm``;
    ``grad.bmm(W)``, ``x^T.bmm(grad)``, ``grad.sum(1)``), each member's operands starting
    where its padded block does: the padding rows enter no product and no sum."""

    @staticmethod
    def forward(ctx, x, w, b, n):  # noqa: D401
        xs, wt = x[:, :n], w.transpose(1, 2)
        y = torch.bmm(xs, wt) if b is None else torch.baddbmm(b.unsqueeze(1), xs, wt)
        out = x.new_zeros(x.shape[0], x.shape[1], w.shape[1])
        out[:, :n] = y
        ctx.save_for_backward(x, w)
        ctx.n, ctx.bias = n, b is not None
        return out

    @staticmethod
    def backward(ctx, grad):
        x, w = ctx.saved_tensors
        n = ctx.n
        g = grad[:, :n]
        gx = gw = gb = None
        if ctx.needs_input_grad[0]:
            gx = torch.zeros_like(x)
            gx[:, :n] = g.bmm(w)
        if ctx.needs_input_grad[1]:
            gw = x[:, :n].transpose(1, 2).bmm(g).transpose(1, 2)
        if ctx.bias and ctx.needs_input_grad[2]:
            gb = g.sum(1)
        return gx, gw, gb, None


def _first_rows(layer: stk.Linear, x: torch.Tensor, m: stk.Members, n: int | None
                ) -> torch.Tensor:
    """``layer(x, m)`` of rows ``x [K', w, in]`` of which each member's first ``n`` are real
    (``None``: all): :class:`_FirstRows` when there is padding."""
    if n is None or n == x.shape[1]:
        return layer(x, m)
    return _FirstRows.apply(x, m.take(layer.weight), layer.bias_of(m), n)


class _JODIENet(SequenceNet):
    """JODIE's parameters for ``k`` members. The stacked methods compute the members ``m`` on
    rows ``[K', w, ...]`` (a loss pass's, :mod:`._steps`); :meth:`projection` and
    :meth:`predict` are those of a network of one member (ranking, TracIn) on rows
    ``[n, ...]``."""

    def __init__(self, k: int, n_users: int, n_items: int, d: int) -> None:
        super().__init__()
        self.n_items = n_items
        self.init_user = nn.Parameter(torch.empty(k, d, device="meta"))
        self.init_item = nn.Parameter(torch.empty(k, d, device="meta"))
        self.user_rnn = stk.Linear(k, 2 * d + 1, d)
        self.item_rnn = stk.Linear(k, 2 * d + 1, d)
        self.project = stk.Linear(k, 1, d)
        self.w_user_dyn = stk.Linear(k, d, d + n_items)
        self.w_prev_dyn = stk.Linear(k, d, d + n_items, bias=False)
        self.w_user_static = stk.Embedding(k, n_users, d + n_items)
        self.w_prev_static = stk.Embedding(k, n_items + 1, d + n_items)  # 0 = none

    def project_users(self, u_prev: torch.Tensor, deltas: torch.Tensor, m: stk.Members,
                      n: int | None = None) -> torch.Tensor:
        """``û = (1 + W_p Δ_u) ⊙ u(t-)`` (eq. 3) of rows ``u_prev [K', w, d]``,
        ``Δ_u [K', w, 1]``; with ``n``, only each member's first ``n`` rows are real (a loss
        pass's padding, :func:`_first_rows`)."""
        return u_prev * (1.0 + _first_rows(self.project, deltas, m, n))

    def predict_items(self, u_proj: torch.Tensor, user_rows: torch.Tensor,
                      prev_dyn: torch.Tensor, prev_rows: torch.Tensor, m: stk.Members,
                      n: int | None = None) -> torch.Tensor:
        """Predicted ``[dynamic ; static]`` embedding of the next item (eq. 4) of rows
        ``[K', w, ...]`` (with ``n``: each member's first ``n`` real, as in
        :meth:`project_users`); ``user_rows``, ``prev_rows`` ``[K', w]``: rows of the stacked
        static tables (member ``k``'s user ``u`` is row ``k n_users + u``, its previous item
        ``p`` row ``k (n_items + 1) + p + 1``). The static weights are read with
        ``index_select`` (backward: one ``index_add`` into the dense gradient;
        ``nn.Embedding``'s CPU backward filled the table about 50 times per step: 45 % of an
        epoch on Foursquare's 5,597 items)."""
        def rows(table: stk.Embedding, at: torch.Tensor) -> torch.Tensor:
            return table.weight.flatten(0, 1).index_select(0, at.reshape(-1)).view(
                *at.shape, -1)

        return (_first_rows(self.w_user_dyn, u_proj, m, n)
                + _first_rows(self.w_prev_dyn, prev_dyn, m, n)
                + rows(self.w_user_static, user_rows) + rows(self.w_prev_static, prev_rows))

    def projection(self, u_prev: torch.Tensor, deltas: torch.Tensor, m: stk.Members
                   ) -> torch.Tensor:
        """:meth:`project_users` of one member's rows ``[n, ...]``."""
        return self.project_users(u_prev[None], deltas[None], m)[0]

    def predict(self, u_proj, users, prev_dyn, prev_item, m: stk.Members):
        """:meth:`predict_items` of the rows ``[n, ...]`` of a network of one member
        (``prev_item``: -1 for none)."""
        if self.size != 1:
            raise ValueError("predict reads a network of one member (network.member(k))")
        return self.predict_items(u_proj[None], users[None], prev_dyn[None],
                                  (prev_item + 1)[None], m)[0]

    def cell_weights(self) -> tuple[torch.Tensor, torch.Tensor]:
        """Both RNN cells of every member as one affine map of ``x = [u(t-), j(t-), Δ_u,
        Δ_j]``: ``[K, 2d, 2d+2]`` weights (rows: user cell, item cell) and ``[K, 2d]``
        biases."""
        wu, wi = self.user_rnn.weight, self.item_rnn.weight
        k, d = wu.shape[:2]
        zero = wu.new_zeros(k, d, 1)
        w = torch.cat([torch.cat([wu, zero], 2),
                       torch.cat([wi[:, :, d:2 * d], wi[:, :, :d], zero, wi[:, :, 2 * d:]], 2)],
                      1)
        bu, bi = self.user_rnn.bias, self.item_rnn.bias
        assert bu is not None and bi is not None
        return w, torch.cat([bu, bi], 1)


@register("jodie")
class JODIE(SequentialRecommender):
    """JODIE coupled user/item RNNs with embedding projection (Kumar et al., KDD 2019)."""

    Config = JODIEConfig
    #: 2: a stack's members take their groups together; the torch recurrence (accelerators)
    #: runs a t-batch level of every member as batched products over blocks padded to
    #: multiples of 64 rows, which changes its numbers (the CPU's numba recurrence and the
    #: losses give version 1's bits; measured)
    implementation = 2
    _rnn_impl = "auto"  # "torch" forces the torch recurrence on the CPU (tests)
    _group_ptr: np.ndarray | None = None  # group boundaries of the next fit (tests)
    user_state_: torch.Tensor  # dynamic embeddings at the end of training (set by fit)
    item_state_: torch.Tensor
    n_users_: int
    time_scale_: float
    group_ptr_: np.ndarray
    user_last_time_: np.ndarray
    plan_stats_: dict[str, int]

    def _init_rule(self, n_users: int = 0, n_items: int = 0):
        """Initial vectors ``normalize(U(-1, 1))`` and projection ``N(0, 1)``; with
        ``init="torch"`` the authors' code: ``normalize(U[0, 1))``, projection weight *and*
        bias ``N(0, 1)`` (their ``NormalLinear``), RNN cells ``U(±1/√d)`` (``nn.RNNCell``) and
        the four parts of the prediction layer — one ``nn.Linear`` over
        ``[û, p(t-), one-hot(p), one-hot(u)]`` in their code — ``U(±1/√(2d + n_items +
        n_users))``."""
        torch_style = self.config.init == "torch"
        d = self.config.embedding_dim
        pred_bound = 1.0 / np.sqrt(2 * d + n_items + n_users) if n_users else 0.0

        def rule(name, shape, g):
            if name in ("init_user", "init_item"):
                v = torch.rand(shape, generator=g)
                v = v if torch_style else v * 2 - 1
                return v / v.norm()
            if name == "project.weight" or (torch_style and name == "project.bias"):
                return torch.randn(shape, generator=g)
            if torch_style and name.split(".")[0] in ("user_rnn", "item_rnn"):
                return (torch.rand(shape, generator=g) * 2 - 1) / np.sqrt(d)
            if torch_style and name.split(".")[0] in ("w_user_dyn", "w_prev_dyn",
                                                      "w_user_static", "w_prev_static"):
                return (torch.rand(shape, generator=g) * 2 - 1) * pred_bound
            return None

        return rule

    def _groups(self, train: Interactions) -> np.ndarray:
        if self.config.grouping == "timespan":
            return timespan_groups(train.timestamp, self.config.n_spans)
        return count_groups(len(train), self.config.batch_size)

    @staticmethod
    def _prepare(train: Interactions, gptr: np.ndarray) -> tuple[Plan, list[dict], float]:
        """The fit's schedule over ``train`` with group boundaries ``gptr``: the plan, the
        per-group arrays (host) and the time scale (the standard deviation of ``Δ_u``)."""
        times = train.timestamp.astype(np.float64)
        prev_u, prev_i = previous_rows(train.user), previous_rows(train.item)
        du = np.where(prev_u >= 0, times - times[np.maximum(prev_u, 0)], 0.0)
        di = np.where(prev_i >= 0, times - times[np.maximum(prev_i, 0)], 0.0)
        scale = float(du.std()) or 1.0
        prev_item = np.where(prev_u >= 0, train.item[np.maximum(prev_u, 0)], -1).astype(np.int64)
        plan = make_plan(train.user, train.item, prev_item, gptr, train.n_users, train.n_items)
        return plan, group_arrays(plan, train, prev_item, du / scale, di / scale), scale

    def fit(self, train: Interactions, *, seed: int, _group_ptr: np.ndarray | None = None
            ) -> JODIE:
        """Train from scratch (``_group_ptr`` overrides the group boundaries; for tests).
        With ``checkpoint_every=T`` the network's weights are kept after every ``T``-th epoch
        for TracIn (:meth:`checkpoint_factors`); keeping them does not change training."""
        self._group_ptr = None if _group_ptr is None else np.asarray(_group_ptr, np.int64)
        try:
            fit_stack([self], [train], [seed])
        finally:
            self._group_ptr = None
        return self

    def _course(self, train: Interactions, seed: int, device: torch.device) -> Course:
        return _JODIECourse(self, train, seed, device)

    # ------------------------------------------------------------------ TracIn
    def checkpoint_factor_stream(self, train: Interactions, rows: np.ndarray, queries: Queries,
                                 chunk_size: int = 4096):
        """TracIn's factors ``(D, H, K)`` per checkpoint, the training rows in chunks (two
        replays of the log per checkpoint; see :mod:`._tracin`)."""
        return factor_stream(self, train, rows, queries, chunk_size)

    def checkpoint_gradients(self, train: Interactions, rows: np.ndarray, queries: Queries):
        """The flattened prediction-layer gradients (memory ``(d + n_items)`` times
        ``(2d + 2 + n_users + n_items)`` floats per example: for small logs and tests)."""
        return gradients(self, train, rows, queries)

    def _query_inputs(self, net: _JODIENet, queries: Queries, sl: slice,
                      user_state: torch.Tensor, item_state: torch.Tensor, device
                      ) -> tuple[torch.Tensor, ...]:
        """``(u, p, û, p(t-))`` of the queries ``sl`` from ``net`` and the given states:
        the user projected to the query's time, the last context item ``p`` (-1: none) and its
        dynamic embedding (zeros for none)."""
        lens = queries.lengths()[sl]
        ends = queries.context_indptr[1:][sl]
        last = np.where(lens > 0, queries.context_item[np.maximum(ends - 1, 0)], -1)
        user = queries.user[sl]
        dt = queries.timestamp[sl].astype(np.float64) - self.user_last_time_[user]
        dt = np.where(np.isnan(dt), 0.0, np.maximum(dt, 0.0)) / self.time_scale_

        def T(a, t=torch.long):  # noqa: N802
            return torch.tensor(np.asarray(a), dtype=t, device=device)

        u, p = T(user), T(last)
        u_proj = net.projection(user_state[u], T(dt, torch.float32)[:, None],
                                stk.Members.of(net))
        p_dyn = torch.where((p >= 0)[:, None], item_state[p.clamp(min=0)],
                            torch.zeros_like(u_proj))
        return u, p, u_proj, p_dyn

    def _scores(self, queries: Queries, device: torch.device, chunk: int | None = None
                ) -> np.ndarray:
        if len(queries) and (queries.user.max() >= self.n_users_):
            raise ValueError("queries contain user codes outside the training log's user space")
        return super()._scores(queries, device, chunk)

    def _chunk_size(self, device: torch.device) -> int:
        return 4096

    def _chunk_scores(self, net: SequenceNet, queries: Queries, device: torch.device
                      ) -> torch.Tensor:
        """``-||ĵ(t) - [j ; j̄]||²`` of every item ``j``, expanded as
        ``||dyn||² - 2 dyn·j + ||j||² + ||stat||² - 2 stat_j + 1``."""
        net = cast(_JODIENet, net)
        item_dyn = self.item_state_
        u, p, u_proj, p_dyn = self._query_inputs(net, queries, slice(None), self.user_state_,
                                                 item_dyn, device)
        pred = net.predict(u_proj, u, p_dyn, p, stk.Members.of(net))
        dyn, stat = pred[:, :item_dyn.shape[1]], pred[:, item_dyn.shape[1]:]
        dist = ((dyn ** 2).sum(1, keepdim=True) - 2 * dyn @ item_dyn.T
                + (item_dyn ** 2).sum(1)[None]
                + (stat ** 2).sum(1, keepdim=True) - 2 * stat + 1.0)
        return -dist


class _JODIECourse(Course):
    """JODIE in the training loop: the mini-batches are the log's groups in time order (the
    plan of :mod:`._plan`), the dynamic embeddings run on from group to group (detached at
    group boundaries) and restart from the learned initial vectors every epoch; the members of
    a stack take their groups together (:class:`._steps.StackEpoch`)."""

    model: JODIE
    total_dtype = torch.float32

    def _prepare(self) -> int:
        train, model = self.train, self.model
        if len(train) == 0:
            raise DataError("jodie: the training log is empty", source=train.name)
        gptr = getattr(model, "_group_ptr", None)
        gptr = model._groups(train) if gptr is None else gptr
        self.plan, self.groups, model.time_scale_ = model._prepare(train, gptr)
        model.group_ptr_ = gptr
        model.n_items_, model.n_users_ = train.n_items, train.n_users
        return len(train)

    def _meta_network(self, k: int) -> SequenceNet:
        return _JODIENet(k, self.train.n_users, self.train.n_items, self.config.embedding_dim)

    def _init_rule(self) -> Any:
        return self.model._init_rule(self.train.n_users, self.train.n_items)

    def _batch_bytes(self) -> int:
        d, n_items = self.config.embedding_dim, self.train.n_items
        rows = max(len(g["deltas"]) for g in self.groups)
        states = (self.train.n_users + n_items) * d
        return 4 * (4 * rows * (d + n_items) + 16 * rows * d + 2 * states)

    @classmethod
    def stack(cls, courses: Sequence[Course]) -> Stack:
        return Stack(list(courses), cls.network(courses), {})  # data: the epochs' plans

    @classmethod
    def epoch(cls, stack: Stack, active: Sequence[Course], epoch: int) -> StackEpoch:
        return StackEpoch(stack, [cast(_JODIECourse, c) for c in active])

    def finish(self, state: torch.Tensor) -> None:
        """``state``: the stack's states after the last epoch ``[K, n_users + n_items, d]``."""
        super().finish(state)
        model, train = self.model, self.train
        mine = state[self.member]
        model.user_state_ = mine[:train.n_users].clone()
        model.item_state_ = mine[train.n_users:].clone()
        model.user_last_time_ = train_last_time(train)
        model.plan_stats_ = {"groups": self.plan.n_groups, "t_batches": self.plan.n_levels}
