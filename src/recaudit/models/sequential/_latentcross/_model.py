"""LatentCross (Beutel, Covington, Jain, Xu, Li, Gatto, Chi. *Latent Cross: Making Use of
Context in Recurrent Recommender Systems.* WSDM 2018).

A GRU over the user's items in which the context ``c`` (here: time differences, as used for
LatentCross in Oh et al. 2022) enters multiplicatively, "as a latent cross" (§4.2-4.3, eq. 5):

    x_j = (1 + w^in(Δ_j)) ⊙ E[s_j]               Δ_j = t_j - t_{j-1} (0 for the first item)
    h_j = GRU(x_j, h_{j-1})
    o_j = (1 + w^out(τ_j)) ⊙ h_j                 τ_j = time from s_j to the predicted event
    score(i | s_1..s_j) = W[i] . ReLU(W_d o_j + b_d) + b[i]

Context embeddings ``w(Δ) = C[bucket(Δ)]`` with ``bucket(Δ) = min(B - 1, floor(log2(1 + Δ)))``
(log-scale buckets, ``B = time_buckets``; the paper embeds its context features and notes the
``1 +`` keeps the cross near the identity at initialisation, so ``C`` starts at 0 scale
``N(0, 0.01)``). At ranking time ``τ`` of the last position is the query's timestamp minus the
last context time (known when the recommendation is asked, like YouTube's "time since last
watch"); the target is never read.

Sample layouts (``samples``):

``"history"`` (the ``latentcross@oh2022`` preset) — as Oh et al. 2022 train their temporal
models (§6.1; "we use all the interactions in JODIE and LatentCross", §7.1.4): every training
interaction is a sample, mini-batches are ``batch_size`` consecutive rows of the log in time
order across users, and each user's GRU state runs on over the whole history — no window, no
restart within an epoch (:mod:`recaudit.models.sequential._history`: the t-batch schedule, the gradient
truncation at mini-batch boundaries, and how a query's state is formed). Row ``k`` of user
``u`` is predicted from ``o = (1 + w^out(Δ_k)) ⊙ h_u`` with ``h_u`` the state after ``u``'s
previous row (zero before the first) and ``Δ_k`` the time since that row; then
``h_u ← GRU((1 + w^in(Δ_k)) ⊙ E[s_k], h_u)``. ``max_len`` only bounds the contexts of queries
built from a log (``rank(log)``).

``"window"`` (default of ``latentcross``) — every position of a window of ``max_len`` items
predicts its next item, windows ordered by their last target's time; the GRU restarts every
``max_len`` items (on Wikipedia ~30x cheaper per epoch than ``"prefix"``). ``"prefix"`` — one
sample per interaction with its own recomputed context of ``max_len`` items. Defaults
``batch_order="temporal"`` (Oh et al. 2022 §6.1: mini-batches follow time).
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import cast

import numpy as np
import torch

from recaudit.data import Interactions, Queries
from recaudit.models.sequential._history import query_layout, train_last_time
from recaudit.models.sequential import _stack as stk
from recaudit.models.sequential._latentcross._levels import plan_packed, run_packed
from recaudit.models.sequential._latentcross._histories import (HistoryCourse, HistoryStack,
                                                                history_groups, np_buckets)
from recaudit.models.sequential._nn import (SequenceNet, deterministic_torch, init_normal,
                                            required)
from recaudit.models._registry import register
from recaudit.models.sequential._samples import StackBatch
from recaudit.models.sequential._base import SequentialRecommender
from recaudit.models.sequential._config import LatentCrossConfig
from recaudit.models.sequential._course import Course

__all__ = ["LatentCross", "log_buckets"]


def log_buckets(delta: torch.Tensor, n: int) -> torch.Tensor:
    """``min(n - 1, floor(log2(1 + max(Δ, 0))))`` as int64."""
    return torch.log2(1.0 + delta.clamp(min=0)).floor().clamp(max=n - 1).long()


class _LatentCrossNet(SequenceNet):
    def __init__(self, k: int, n_items: int, cfg: LatentCrossConfig) -> None:
        super().__init__()
        d, h = cfg.embedding_dim, cfg.hidden_dim
        self.n_buckets = cfg.time_buckets
        self.embedding = stk.Embedding(k, n_items + 1, d, padding_idx=0)
        self.ctx_in = stk.Embedding(k, cfg.time_buckets, d)
        self.ctx_out = stk.Embedding(k, cfg.time_buckets, h)
        self.drop = stk.Dropout(cfg.dropout)
        self.gru = stk.Recurrent("GRU", k, d, h, recurrence=cfg.recurrence)
        self.dense = stk.Linear(k, h, d)
        self.out = stk.Linear(k, d, n_items)

    def forward(self, batch: StackBatch, m: stk.Members) -> torch.Tensor:
        gaps = log_buckets(required(batch.gaps, "time gaps"), self.n_buckets)
        x = self.embedding(batch.items, m) * (1.0 + self.ctx_in(gaps, m))
        h = self.gru(self.drop(x, m), m)
        nxt = log_buckets(required(batch.next_gaps, "time gaps"), self.n_buckets)
        return h * (1.0 + self.ctx_out(nxt, m))

    def inputs(self, items: torch.Tensor, buckets: torch.Tensor, m: stk.Members
               ) -> torch.Tensor:
        """GRU inputs ``(1 + w^in) ⊙ E[item]`` ``[K, n, D]`` of the members' interactions (item
        codes, gap buckets ``[K, n]``), dropout applied."""
        x = self.embedding(items + 1, m) * (1.0 + self.ctx_in(buckets, m))
        return self.drop(x, m)

    def head(self, o: torch.Tensor, m: stk.Members) -> torch.Tensor:
        return torch.relu(self.dense(self.drop(o, m), m))

    def output(self, m: stk.Members) -> tuple[torch.Tensor, torch.Tensor | None]:
        return m.take(self.out.weight), self.out.bias_of(m)


@register("latentcross")
class LatentCross(SequentialRecommender):
    """LatentCross GRU with time-difference context (Beutel et al., WSDM 2018)."""

    Config = LatentCrossConfig
    uses_time = True
    #: 3: a stack over whole histories trains as one pass per step (``_histories``):
    #: ``recurrence = "batched"`` runs the padded levels of :mod:`._levels` where it ran the
    #: fused kernel (other numbers), the loss is each member's sum over its rows / ``n`` (the
    #: logged loss differs in the last bits; with ``"native"`` the lists are unchanged)
    implementation = 3
    n_users_: int
    user_state_: torch.Tensor
    user_last_time_: np.ndarray
    _train_: Interactions

    def _network(self, n_items: int, k: int = 1) -> _LatentCrossNet:
        return _LatentCrossNet(k, n_items, self.config)

    def _net(self) -> _LatentCrossNet:
        return cast(_LatentCrossNet, self._fitted())

    def _init_rule(self):
        def rule(name, shape, g):
            if name in ("ctx_in.weight", "ctx_out.weight"):
                return init_normal(shape, 0.01, g)
            return None

        return rule

    @property
    def _history(self) -> bool:
        return self.config.samples == "history"

    # ------------------------------------------------------------------ history samples
    def _course(self, train: Interactions, seed: int, device: torch.device) -> Course:
        return HistoryCourse(self, train, seed, device) if self._history \
            else super()._course(train, seed, device)

    def _fitted_state(self, net: _LatentCrossNet, state: torch.Tensor, device) -> None:
        """Fitted state: the network and every user's state ``[U, H]`` after the training
        history under it (the course computes it: :meth:`HistoryStack.states`)."""
        self.network_ = net
        self.device_ = device
        self.user_state_ = state
        self.user_last_time_ = train_last_time(self._train_)

    def _pass(self, net: _LatentCrossNet, history: HistoryStack, rows_out: bool = False
              ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Every user's state after the history (a stack of one's) under ``net`` and, with
        ``rows_out``, each row's ``o`` in log order."""
        return history.states(net, [0], rows_out)

    def _history_hidden(self, net: _LatentCrossNet, queries: Queries, state: torch.Tensor,
                        device) -> torch.Tensor:
        """``head(o)`` ``[Q, D]`` of each query (module docstring of ``_history``)."""
        lay = query_layout(queries, self.user_last_time_)
        nb = self.config.time_buckets

        def t(a, dt=torch.long):
            return torch.tensor(np.asarray(a)).to(device=device, dtype=dt)

        m = stk.Members.of(net)
        h = state.index_select(0, t(queries.user))
        if len(lay.queries):
            plan = plan_packed([lay.batch_sizes], [lay.queries], len(lay.items), device,
                               stk.resolve_recurrence(self.config.recurrence, device))
            x = net.inputs(t(lay.items)[None], t(np_buckets(lay.gaps, nb))[None], m)
            _, final = run_packed(net.gru, x, h, plan, m)
            h = h.index_copy(0, plan.rows, final)
        tau = queries.timestamp.astype(np.float64) - lay.last_time
        tau = np.where(np.isnan(tau), 0.0, tau)
        o = h * (1.0 + net.ctx_out(t(np_buckets(tau, nb))[None], m)[0])
        return net.head(o.unsqueeze(0), m)[0]

    def _chunk_size(self, device: torch.device) -> int:
        return 4096 if self._history else super()._chunk_size(device)

    def _chunk_scores(self, net: SequenceNet, queries: Queries, device: torch.device
                      ) -> torch.Tensor:
        if not self._history:
            return super()._chunk_scores(net, queries, device)
        net = cast(_LatentCrossNet, net)
        return self._logits(net, self._history_hidden(net, queries, self.user_state_, device))

    def checkpoint_factor_stream(self, train: Interactions, rows: np.ndarray, queries: Queries,
                                 chunk_size: int = 4096) -> Iterator[tuple]:
        """As :meth:`SequentialRecommender.checkpoint_factor_stream`; with ``samples="history"``
        training row ``r``'s representation is its ``head(o_r)`` from the state before ``r``
        over ``train``'s whole history, and a test query's is the one it is ranked from, both
        under the checkpoint's weights: one pass over the history per checkpoint."""
        if not self._history:
            yield from super().checkpoint_factor_stream(train, rows, queries, chunk_size)
            return
        fitted, q = self._tracin_inputs(queries)
        rows = np.asarray(rows, dtype=np.int64)
        device, cfg = self.device_, self.config
        with deterministic_torch(cfg.num_threads, device, fill_uninitialized=False):
            history = HistoryStack([history_groups(train, cfg.batch_size, cfg.time_buckets)],
                                   train.n_users, cfg.hidden_dim, device, cfg.recurrence)
            net = copy.deepcopy(fitted)
            for lr, state in self.checkpoints_:
                net.load_state_dict(state)
                end, o = self._pass(net, history, rows_out=True)
                with torch.no_grad():
                    f_test = self._factors(net, self._history_hidden(net, q, end, device),
                                           torch.as_tensor(q.target.astype(np.int64)).to(device))
                yield lr, f_test, True, self._row_chunks(net, required(o, "row states"), train,
                                                         rows, chunk_size, device)

    def _row_chunks(self, net: _LatentCrossNet, o: torch.Tensor, train: Interactions,
                    rows: np.ndarray, chunk_size: int, device) -> Iterator[tuple]:
        m = stk.Members.of(net)
        for lo in range(0, len(rows), chunk_size):
            part = rows[lo:lo + chunk_size]
            with torch.no_grad():
                h = net.head(o[torch.as_tensor(part).to(device)].unsqueeze(0), m)[0]
                f = self._factors(net, h,
                                  torch.as_tensor(train.item[part].astype(np.int64)).to(device))
            yield part, f
