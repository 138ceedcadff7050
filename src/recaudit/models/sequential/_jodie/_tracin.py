"""TracIn for JODIE (Oh et al. 2022 §7.1.2: "training loss gradients with respect to the last
hidden layer", checkpoints every 10 epochs).

JODIE's last layer is its prediction layer (eq. 4), one affine map of
``x = [û ; p(t-) ; one-hot(p) ; one-hot(u)]`` in the authors' code (here ``w_user_dyn`` with the
bias, ``w_prev_dyn``, ``w_prev_static``, ``w_user_static``). The loss of an example is the first
term of eq. 5, ``l = ||ĵ - [j(t-) ; e_j]||²`` (the smoothness terms do not reach this layer; the
training reduction's constant factors are left out: they rescale every score alike only for
``loss_reduction="group-sum"``, and TracIn asks which examples matter, not how the optimiser
weighed them). With ``D = dl/dĵ = 2 (ĵ - [j(t-) ; e_j])`` (width ``d + n_items``) the gradient is
``D xᵀ``, so for two examples

    G_a · G_b = (D_a · D_b) (û_a·û_b + p_a·p_b + 1 + [p_a = p_b] + [u_a = u_b])

and TracIn needs only ``D``, ``H = [û ; p(t-)]`` and the keys ``K = [p + 1, u]`` (``p = -1``:
no previous item, the ``none`` row of ``w_prev_static``): the factors ``(D, H, K)`` that
:func:`recaudit.perturb.tracin_scores` reads, with ``has_bias=True``.

States: at each checkpoint the log is replayed *with the checkpoint's weights* from the initial
vectors, group by group in the fit's order and t-batches (the same recurrence and reads as
training, without the updates), so a training row's ``û``, ``p(t-)`` and ``j(t-)`` are those the
checkpoint's network gives it, and a test query reads the end states of that replay, projected
to its time as in ranking. During training the states came from weights that changed after
every group; a checkpoint's own weights are what TracIn's gradient at that checkpoint means.

Cost: two replays per checkpoint (the first for the end states the test factors need, the
second streams the training rows in chunks), forward only; nothing of size ``rows × n_items``
is kept beyond one chunk.
"""

from __future__ import annotations

import copy
from collections import deque
from collections.abc import Iterator
from typing import Any

import numpy as np
import torch

from recaudit.data import Interactions, Queries
from recaudit.models.sequential._jodie._rnn import row_pad, uses_numba
from recaudit.models.sequential._jodie._steps import (advance, initial_states, plan_steps,
                                                      step_buffer)
from recaudit.models.sequential._nn import deterministic_torch
from recaudit.models.sequential._stack import Members

__all__ = ["factor_stream", "gradients"]

_CHUNK = 4096


def factor_stream(model: Any, train: Interactions, rows: np.ndarray, queries: Queries,
                  chunk_size: int = _CHUNK) -> Iterator[tuple[float, tuple, bool, Iterator]]:
    """Per checkpoint ``(lr, (D, H, K) of the queries, True, chunks)``; ``chunks`` yields
    ``(row ids, (D, H, K))`` covering each of ``rows`` once, in the fit's order, about
    ``chunk_size`` rows at a time. Consume a checkpoint's chunks before asking for the next."""
    net0, q = model._tracin_inputs(queries)
    _check_log(model, train)
    if len(q) and q.user.max() >= model.n_users_:
        raise ValueError("queries contain user codes outside the training log's user space")
    wanted = np.zeros(len(train), dtype=bool)
    wanted[np.asarray(rows, dtype=np.int64)] = True
    device = model.device_
    with deterministic_torch(model.config.num_threads, device, fill_uninitialized=False):
        _, groups, _ = model._prepare(train, model.group_ptr_)
        for lr, state in model.checkpoints_:
            net = copy.deepcopy(net0)
            net.load_state_dict(state)
            net.eval()
            *_, users, items = deque(_walk(model, net, groups), maxlen=1)[0]  # end states
            test = _query_factors(model, net, q, users, items, device)
            yield lr, test, True, _row_chunks(model, net, groups, wanted, chunk_size)


def gradients(model: Any, train: Interactions, rows: np.ndarray, queries: Queries
              ) -> Iterator[tuple[float, np.ndarray, np.ndarray]]:
    """Flattened prediction-layer gradients ``[W_dyn | b | W_prev_static | W_user_static]``
    per checkpoint (the dense form of :func:`factors`)."""
    blocks = (model.n_items_ + 1, model.n_users_)

    def dense(d, h, k):
        out = [(d[:, :, None] * h[:, None, :]).reshape(len(d), -1), d]
        for j, n in enumerate(blocks):
            g = np.zeros((len(d), n, d.shape[1]), dtype=d.dtype)
            g[np.arange(len(d)), k[:, j]] = d
            out.append(g.reshape(len(d), -1))
        return np.concatenate(out, axis=1)

    for lr, f_train, f_test, _ in model.checkpoint_factors(train, rows, queries):
        yield lr, dense(*f_train), dense(*f_test)


def _check_log(model: Any, train: Interactions) -> None:
    if (len(train) != int(model.group_ptr_[-1]) or train.n_users != model.n_users_
            or train.n_items != model.n_items_):
        raise ValueError(f"TracIn replays the log the model was fitted on: it had "
                         f"{int(model.group_ptr_[-1])} rows, {model.n_users_} users and "
                         f"{model.n_items_} items; got {len(train)}, {train.n_users} and "
                         f"{train.n_items}")


def _walk(model: Any, net: Any, groups: list[dict]
          ) -> Iterator[tuple[dict, Any, torch.Tensor, torch.Tensor, torch.Tensor]]:
    """The fit's forward pass with fixed weights (the training steps of a stack of one):
    ``(group, its step, its state buffer, user states, item states)`` per group, the states
    as they are after the group."""
    device = model.device_
    fast = uses_numba(model._rnn_impl, device)
    steps = plan_steps([groups], [0], 1, model.n_users_, model.n_items_, row_pad(fast), device)
    with torch.no_grad():
        states = initial_states(net, model.n_users_)
    for grp, step in zip(groups, steps, strict=True):
        with torch.no_grad():
            buf = step_buffer(net, step, states, fast)
            advance(states, step, buf)
        yield grp, step, buf, states[0, :model.n_users_], states[0, model.n_users_:]


def _row_chunks(model: Any, net: Any, groups: list[dict], wanted: np.ndarray, chunk: int
                ) -> Iterator[tuple[np.ndarray, tuple]]:
    ids: list[np.ndarray] = []
    parts: list[tuple] = []
    held = 0
    for grp, step, buf, _, _ in _walk(model, net, groups):
        sel = np.flatnonzero(wanted[grp["rows"]])
        if len(sel):
            ids.append(grp["rows"][sel])
            parts.append(_row_factors(net, buf, grp, step.losses[0], sel))
            held += len(sel)
        if held >= chunk:
            yield _joined(ids, parts)
            ids, parts, held = [], [], 0
    if held:
        yield _joined(ids, parts)


def _joined(ids: list[np.ndarray], parts: list[tuple]) -> tuple[np.ndarray, tuple]:
    return np.concatenate(ids), tuple(np.concatenate([p[i] for p in parts]) for i in range(3))


@torch.no_grad()
def _row_factors(net: Any, buf: torch.Tensor, grp: dict, lg: Any, sel: np.ndarray) -> tuple:
    """``(D, H, K)`` of the group's rows ``sel`` (positions in the group's order; ``lg``: the
    step's one loss pass, whose slots are the rows')."""
    at = torch.as_tensor(sel).to(buf.device)

    def host(a, dtype=torch.long):
        return torch.as_tensor(a[sel], dtype=dtype).to(buf.device)

    u_prev = buf.index_select(0, lg.iu[at])
    item_prev = buf.index_select(0, lg.ii[at])
    p_dyn = buf.index_select(0, lg.ip[at])
    u_proj = net.projection(u_prev, host(grp["deltas"][:, :1], torch.float32),
                            Members.of(net))
    return _triple(net, u_proj, host(grp["users"]), p_dyn, host(grp["prev"]), item_prev,
                   host(grp["items"]))


@torch.no_grad()
def _query_factors(model: Any, net: Any, q: Queries, users: torch.Tensor, items: torch.Tensor,
                   device) -> tuple:
    out = []
    for lo in range(0, len(q), _CHUNK):
        sl = slice(lo, lo + _CHUNK)
        u, p, u_proj, p_dyn = model._query_inputs(net, q, sl, users, items, device)
        y = torch.as_tensor(q.target[sl].astype(np.int64)).to(device)
        out.append(_triple(net, u_proj, u, p_dyn, p, items.index_select(0, y), y))
    if not out:
        width = model.config.embedding_dim
        return (np.empty((0, width + model.n_items_), np.float32),
                np.empty((0, 2 * width), np.float32), np.empty((0, 2), np.int64))
    return tuple(np.concatenate([o[i] for o in out]) for i in range(3))


def _triple(net: Any, u_proj, users, p_dyn, prev, item_dyn, item) -> tuple:
    pred = net.predict(u_proj, users, p_dyn, prev, Members.of(net))
    d = 2.0 * pred
    d[:, :item_dyn.shape[1]] -= 2.0 * item_dyn
    d[torch.arange(len(item), device=d.device), item_dyn.shape[1] + item] -= 2.0
    h = torch.cat([u_proj, p_dyn], 1)
    k = torch.stack([prev + 1, users], 1)
    return d.float().cpu().numpy(), h.float().cpu().numpy(), k.cpu().numpy().astype(np.int64)
