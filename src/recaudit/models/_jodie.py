"""JODIE (Kumar, Zhang, Leskovec. *Predicting Dynamic Embedding Trajectory in Temporal
Interaction Networks.* KDD 2019).

Every user and item has a dynamic embedding (``d``) and a static one-hot embedding. An
interaction ``(u, j, t)`` updates both with coupled RNNs (eq. 1-2; tanh RNN cells, embeddings
L2-normalised as in the authors' code):

    u(t) = norm(tanh(W_u [u(t-); j(t-); Δ_u] + b_u))        Δ_u: time since u's previous event
    j(t) = norm(tanh(W_i [j(t-); u(t-); Δ_j] + b_i))        Δ_j: time since j's previous event

Before the interaction the model *projects* the user embedding to time ``t`` (eq. 3) and
predicts the embedding of the item it will interact with (eq. 4):

    û(t) = (1 + w) ⊙ u(t_u),  w = W_p Δ_u
    ĵ(t) = W_1 û + W_2 ū + W_3 i(t-) + W_4 ī + b         (i: the user's previous item)

Loss (eq. 5): ``||ĵ - [j(t-) ; j̄]||² + λ_U ||u(t) - u(t-)||² + λ_I ||j(t) - j(t-)||²``.
Training processes the log in time order with *t-batches* (§4.3: interaction ``k`` goes to
batch ``1 + max(batch of u's previous, batch of j's previous)``, so a t-batch never contains two
interactions of the same user or item and batches respect time). Dynamic embeddings restart
from learned initial vectors every epoch; gradients flow through the embedding trajectory
within a group of consecutive t-batches holding at least ``batch_size`` interactions, which is
one optimiser step (the authors' ``tbatch_timespan`` truncation).

Ranking (as in the paper): for a query (user ``u`` at time ``t``, last context item ``i``),
every item ``j`` is scored by ``-||ĵ(t) - [j ; j̄]||²`` with the embeddings at the end of
training; users or items never seen keep the initial embedding. Time differences are divided
by the standard deviation of the training ``Δ_u`` (as the authors' code scales them).

Only ``batch_order="temporal"`` (t-batches) is meaningful: embedding updates must follow time.
Defaults: d 128 (seed 000 §5; paper 128), lr 0.001, λ_U = λ_I = 1, epochs 50.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from numba import njit
from torch import nn

from recaudit.data import Interactions, Queries
from recaudit.errors import ConfigError
from recaudit.models._nn import deterministic_torch, materialize, resolve_device
from recaudit.models._registry import register
from recaudit.models._sequential import SequentialConfig, SequentialRecommender
from recaudit.seeds import make_torch_generator

__all__ = ["JODIE", "t_batches"]


@dataclass(frozen=True)
class JODIEConfig(SequentialConfig):
    """JODIE options (see :class:`SequentialConfig`; ``max_len``/``samples``/``dropout`` are
    unused). lambda_user / lambda_item: smoothness weights (1.0); batch_size: interactions per
    optimiser step (t-batches are grouped until they reach it)."""

    batch_order: str = "temporal"
    batch_size: int = 512
    lambda_user: float = 1.0
    lambda_item: float = 1.0

    def validate(self) -> None:
        super().validate()
        if self.batch_order != "temporal":
            raise ConfigError("JODIEConfig.batch_order must be 'temporal': JODIE's embedding "
                              "trajectories are updated in time order (t-batches)")
        for key in ("patience", "checkpoint_every"):
            if getattr(self, key) is not None:
                raise ConfigError(f"JODIEConfig.{key} is not supported by jodie; leave it None")
        for key in ("lambda_user", "lambda_item"):
            if getattr(self, key) < 0:
                raise ConfigError(f"JODIEConfig.{key} must be >= 0")


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
    """T-batch index of every row of ``train`` (rows are in time order)."""
    return _t_batches(train.user.astype(np.int64), train.item.astype(np.int64), train.n_users,
                      train.n_items)


def _previous(codes: np.ndarray, times: np.ndarray, n: int):
    """For each row: time since the previous row with the same code (0 if none), and that row."""
    order = np.argsort(codes, kind="stable")
    prev = np.full(len(codes), -1, np.int64)
    same = codes[order][1:] == codes[order][:-1]
    prev[order[1:][same]] = order[:-1][same]
    delta = np.where(prev >= 0, times - times[np.maximum(prev, 0)], 0.0)
    return delta, prev


class _JODIENet(nn.Module):
    def __init__(self, n_users: int, n_items: int, d: int) -> None:
        super().__init__()
        self.n_items = n_items
        self.init_user = nn.Parameter(torch.empty(d, device="meta"))
        self.init_item = nn.Parameter(torch.empty(d, device="meta"))
        self.user_rnn = nn.Linear(2 * d + 1, d, device="meta")
        self.item_rnn = nn.Linear(2 * d + 1, d, device="meta")
        self.project = nn.Linear(1, d, device="meta")
        self.w_user_dyn = nn.Linear(d, d + n_items, device="meta")
        self.w_prev_dyn = nn.Linear(d, d + n_items, bias=False, device="meta")
        self.w_user_static = nn.Embedding(n_users, d + n_items, device="meta")
        self.w_prev_static = nn.Embedding(n_items + 1, d + n_items, device="meta")  # 0 = none

    def predict(self, u_proj, users, prev_dyn, prev_item):
        """Predicted ``[dynamic ; static]`` embedding of the next item (eq. 4)."""
        return (self.w_user_dyn(u_proj) + self.w_prev_dyn(prev_dyn)
                + self.w_user_static(users) + self.w_prev_static(prev_item + 1))


@register("jodie")
class JODIE(SequentialRecommender):
    """JODIE coupled user/item RNNs with embedding projection (Kumar et al., KDD 2019)."""

    Config = JODIEConfig

    def _init_rule(self):
        def rule(name, shape, g):
            if name in ("init_user", "init_item"):
                v = torch.rand(shape, generator=g) * 2 - 1
                return v / v.norm()
            if name == "project.weight":
                return torch.randn(shape, generator=g)
            return None

        return rule

    def fit(self, train: Interactions, *, seed: int) -> JODIE:
        if not isinstance(train, Interactions):
            raise TypeError(f"train must be Interactions, got {type(train).__name__}")
        if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
            raise TypeError(f"seed must be an int, got {type(seed).__name__}")
        if len(train) == 0:
            raise ValueError("jodie: the training log is empty")
        cfg = self.config
        device = resolve_device(cfg.device)
        d = cfg.embedding_dim
        du, prev_u = _previous(train.user, train.timestamp.astype(np.float64), train.n_users)
        di, _ = _previous(train.item, train.timestamp.astype(np.float64), train.n_items)
        self.time_scale_ = float(du.std()) or 1.0
        prev_item = np.where(prev_u >= 0, train.item[np.maximum(prev_u, 0)], -1)
        tb = t_batches(train)
        bounds = np.flatnonzero(np.diff(tb)) + 1
        starts = np.concatenate([[0], bounds])
        ends = np.concatenate([bounds, [len(train)]])
        def T(a, dt=torch.long):  # noqa: N802
            return torch.tensor(np.asarray(a), dtype=dt, device=device)
        users, items, pitems = T(train.user), T(train.item), T(prev_item)
        du_t = T(du / self.time_scale_, torch.float32)[:, None]
        di_t = T(di / self.time_scale_, torch.float32)[:, None]
        self.n_items_, self.n_users_ = train.n_items, train.n_users
        self.history_, self.checkpoints_ = [], []
        with deterministic_torch(cfg.num_threads, device):
            net = materialize(_JODIENet(train.n_users, train.n_items, d),
                              make_torch_generator(seed, "jodie", "init"), device,
                              self._init_rule())
            opt = torch.optim.Adam(net.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay,
                                   foreach=False)
            for epoch in range(cfg.epochs):
                U = net.init_user.expand(train.n_users, d).clone()
                Ie = net.init_item.expand(train.n_items, d).clone()
                loss, count, total = 0.0, 0, 0.0
                for b, (lo, hi) in enumerate(zip(starts, ends)):
                    u, i, p = users[lo:hi], items[lo:hi], pitems[lo:hi]
                    u_prev, i_prev = U[u], Ie[i]
                    p_dyn = torch.where((p >= 0)[:, None], Ie[p.clamp(min=0)],
                                        torch.zeros_like(i_prev))
                    u_proj = u_prev * (1.0 + net.project(du_t[lo:hi]))
                    pred = net.predict(u_proj, u, p_dyn, p)
                    target = torch.cat([i_prev, nn.functional.one_hot(i, train.n_items)
                                        .to(i_prev.dtype)], dim=1)
                    u_new = nn.functional.normalize(torch.tanh(
                        net.user_rnn(torch.cat([u_prev, i_prev, du_t[lo:hi]], 1))), dim=1)
                    i_new = nn.functional.normalize(torch.tanh(
                        net.item_rnn(torch.cat([i_prev, u_prev, di_t[lo:hi]], 1))), dim=1)
                    loss = loss + ((pred - target) ** 2).sum() \
                        + cfg.lambda_user * ((u_new - u_prev) ** 2).sum() \
                        + cfg.lambda_item * ((i_new - i_prev) ** 2).sum()
                    U = U.index_copy(0, u, u_new)
                    Ie = Ie.index_copy(0, i, i_new)
                    count += hi - lo
                    if count >= cfg.batch_size or b == len(starts) - 1:
                        opt.zero_grad(set_to_none=True)
                        (loss / count).backward()
                        opt.step()
                        total += float(loss.detach())
                        loss, count = 0.0, 0
                        U, Ie = U.detach(), Ie.detach()
                self.history_.append({"epoch": epoch + 1, "loss": total / len(train)})
            net.eval()
        self.network_ = net
        self.device_ = device
        self.user_state_ = U.detach()
        self.item_state_ = Ie.detach()
        last_t = np.full(train.n_users, np.nan)
        last_t[train.user] = train.timestamp  # rows are in time order: last write wins
        self.user_last_time_ = last_t
        return self

    def checkpoint_gradients(self, train, rows, queries):
        raise NotImplementedError("jodie has no softmax output layer (it regresses embeddings); "
                                  "TracIn gradients are available for gru4rec, lstm, sasrec, "
                                  "tisasrec, bert4rec and latentcross")

    def _scores(self, queries: Queries, device, chunk: int = 1024) -> np.ndarray:
        net = self.network_
        out = np.empty((len(queries), self.n_items_), dtype=np.float32)
        lens = queries.lengths()
        last = np.where(lens > 0, queries.context_item[np.maximum(queries.context_indptr[1:] - 1,
                                                                  0)], -1)
        if len(queries) and (queries.user.max() >= self.n_users_):
            raise ValueError("queries contain user codes outside the training log's user space")
        dt = queries.timestamp.astype(np.float64) - self.user_last_time_[queries.user]
        dt = np.where(np.isnan(dt), 0.0, np.maximum(dt, 0.0)) / self.time_scale_
        def T(a, t=torch.long):  # noqa: N802
            return torch.tensor(np.asarray(a), dtype=t, device=device)
        item_dyn = self.item_state_
        item_sq = (item_dyn ** 2).sum(1)
        with torch.no_grad():
            for lo in range(0, len(queries), chunk):
                sl = slice(lo, lo + chunk)
                u, p = T(queries.user[sl]), T(last[sl])
                dt_t = T(dt[sl], torch.float32)[:, None]
                u_proj = self.user_state_[u] * (1.0 + net.project(dt_t))
                p_dyn = torch.where((p >= 0)[:, None], item_dyn[p.clamp(min=0)],
                                    torch.zeros_like(u_proj))
                pred = net.predict(u_proj, u, p_dyn, p)
                dyn, stat = pred[:, :item_dyn.shape[1]], pred[:, item_dyn.shape[1]:]
                # ||pred - [j ; e_j]||^2 = ||dyn||^2 - 2 dyn.j + ||j||^2 + ||stat||^2 - 2 stat_j + 1
                dist = ((dyn ** 2).sum(1, keepdim=True) - 2 * dyn @ item_dyn.T + item_sq[None]
                        + (stat ** 2).sum(1, keepdim=True) - 2 * stat + 1.0)
                out[sl] = (-dist).float().cpu().numpy()
        return out
