"""JODIE's fast training against a plain row-by-row reference; its schedule; its recurrence."""

import numpy as np
import pytest
import torch
from torch import nn

from recaudit.data import synthetic, temporal_ratio_split
from recaudit.models import create
from recaudit.models.sequential._jodie._model import _JODIENet
from recaudit.models.sequential._history import count_groups
from recaudit.models.sequential._jodie._plan import (group_arrays, make_plan, previous_rows,
                                                    timespan_groups)
from recaudit.models.sequential._jodie._rnn import cascade, row_pad
from recaudit.models.sequential._jodie._steps import plan_steps
from recaudit.models.sequential._nn import materialize
from recaudit.seeds import make_torch_generator


def _small_train(seed=1, n_users=40, n_items=25):
    log = synthetic(seed=seed, n_users=n_users, n_items=n_items, n_clusters=min(10, n_items))
    return temporal_ratio_split(log).train


def reference_fit(model, train, seed, group_ptr):
    """JODIE as written in the docstring, one row at a time in time order (torch autograd,
    torch's loop Adam): the textbook algorithm the fast implementation must equal."""
    cfg = model.config
    d = cfg.embedding_dim
    t = train.timestamp.astype(np.float64)
    pu, pi = previous_rows(train.user), previous_rows(train.item)
    du = np.where(pu >= 0, t - t[np.maximum(pu, 0)], 0.0)
    di = np.where(pi >= 0, t - t[np.maximum(pi, 0)], 0.0)
    scale = float(du.std()) or 1.0
    prev = np.where(pu >= 0, train.item[np.maximum(pu, 0)], -1)
    net = materialize(_JODIENet(1, train.n_users, train.n_items, d),
                      [make_torch_generator(seed, "jodie", "init")], torch.device("cpu"),
                      model._init_rule(train.n_users, train.n_items), style=cfg.init)
    # the one member's parameters as plain tensors, trained by torch's own loop Adam
    P = {k: nn.Parameter(v.detach()[0].clone()) for k, v in net.named_parameters()}

    def linear(name, x, bias=True):
        return nn.functional.linear(x, P[f"{name}.weight"], P[f"{name}.bias"] if bias else None)

    opt = torch.optim.Adam(P.values(), lr=cfg.lr, weight_decay=cfg.weight_decay,
                           foreach=False)
    # t-batch level of each row inside its group (for the per-t-batch mean of the authors'
    # code): one more than the highest level among the group's earlier rows it reads
    level = np.zeros(len(train), np.int64)
    for g in range(len(group_ptr) - 1):
        lo = group_ptr[g]
        for k in range(lo, group_ptr[g + 1]):
            reads = [j for j in range(lo, k) if train.user[j] == train.user[k]
                     or train.item[j] in (train.item[k], prev[k])]
            level[k] = 1 + max((level[j] for j in reads), default=-1)
    mean = cfg.loss_reduction == "tbatch-mean"
    losses = []
    for _ in range(cfg.epochs):
        U = [P["init_user"].clone()] * train.n_users  # copies: the epoch's initial values
        Ie = [P["init_item"].clone()] * train.n_items
        total = 0.0
        for g in range(len(group_ptr) - 1):
            loss = 0.0
            for k in range(group_ptr[g], group_ptr[g + 1]):
                u, i, p = int(train.user[k]), int(train.item[k]), int(prev[k])
                up, ip = U[u], Ie[i]
                pdyn = Ie[p] if p >= 0 else torch.zeros(d)
                dut = torch.tensor([du[k] / scale], dtype=torch.float32)
                dit = torch.tensor([di[k] / scale], dtype=torch.float32)
                proj = up * (1 + linear("project", dut))
                pred = (linear("w_user_dyn", proj) + linear("w_prev_dyn", pdyn, bias=False)
                        + P["w_user_static.weight"][u] + P["w_prev_static.weight"][p + 1])
                ut, it = (up.detach(), ip.detach()) if cfg.detach_targets else (up, ip)
                target = torch.cat([it, nn.functional.one_hot(torch.tensor(i),
                                                              train.n_items).float()])
                un = nn.functional.normalize(torch.tanh(linear("user_rnn",
                                                               torch.cat([up, ip, dut]))), dim=0)
                inew = nn.functional.normalize(torch.tanh(linear("item_rnn",
                                                                 torch.cat([ip, up, dit]))), dim=0)
                terms = [((pred - target) ** 2), (un - ut) ** 2, (inew - it) ** 2]
                red = [t.mean() if mean else t.sum() for t in terms]
                w = 1.0
                if mean:  # this row's share of its t-batch's mean
                    lo, hi = group_ptr[g], group_ptr[g + 1]
                    w = 1.0 / int(np.sum(level[lo:hi] == level[k]))
                loss = loss + w * (red[0] + cfg.lambda_user * red[1] + cfg.lambda_item * red[2])
                U[u], Ie[i] = un, inew
            opt.zero_grad()
            (loss / (1 if mean else group_ptr[g + 1] - group_ptr[g])).backward()
            opt.step()
            total += float(loss.detach())
            U = [x.detach() for x in U]
            Ie = [x.detach() for x in Ie]
        losses.append(total / len(train))
    return P, losses, torch.stack(U), torch.stack(Ie)


@pytest.mark.parametrize("params", [
    dict(batch_size=64),
    dict(batch_size=50, detach_targets=True, lambda_user=0.5, weight_decay=1e-3),
    dict(grouping="timespan", n_spans=20),
    dict(grouping="timespan", n_spans=15, detach_targets=True, loss_reduction="tbatch-mean",
         weight_decay=1e-5),
])
def test_fast_training_equals_row_by_row_reference(params):
    train = _small_train(n_users=20)  # ~500 rows: 8-10 t-batches of the reference's slow loop
    model = create("jodie", epochs=2, embedding_dim=12, lr=0.01, **params).fit(train, seed=3)
    gptr = model._groups(train)
    params, losses, U, Ie = reference_fit(model, train, 3, gptr)
    got = [h["loss"] for h in model.history_]
    np.testing.assert_allclose(got, losses, rtol=2e-5)
    for k, v in params.items():
        np.testing.assert_allclose(model.network_.state_dict()[k][0].numpy(),
                                   v.detach().numpy(), atol=2e-5, err_msg=k)
    np.testing.assert_allclose(model.user_state_.numpy(), U.numpy(), atol=2e-5)
    np.testing.assert_allclose(model.item_state_.numpy(), Ie.numpy(), atol=2e-5)


def test_numba_and_torch_recurrences_agree():
    train = _small_train(seed=2)
    a = create("jodie", epochs=2, embedding_dim=16, batch_size=40).fit(train, seed=0)
    b = create("jodie", epochs=2, embedding_dim=16, batch_size=40)
    b._rnn_impl = "torch"
    b.fit(train, seed=0)
    for k, v in a.network_.state_dict().items():
        np.testing.assert_allclose(v.numpy(), b.network_.state_dict()[k].numpy(), atol=1e-5)
    np.testing.assert_allclose(a.score(train), b.score(train), rtol=1e-4, atol=1e-4)


def _random_step(seed, d=6, sizes=(30, 23, 12), pad_numba=False):
    """The first step of a stack whose member ``p`` trains on the first ``sizes[p]`` rows of
    a small log (one group each: members with different levels and rows), and random entry
    states."""
    train = _small_train(seed=seed, n_users=8, n_items=6)
    pu = previous_rows(train.user)
    prev = np.where(pu >= 0, train.item[np.maximum(pu, 0)], -1)
    rng = np.random.default_rng(seed)
    groups = []
    for n in sizes:
        plan = make_plan(train.user[:n], train.item[:n], prev[:n], np.array([0, n]),
                         train.n_users, train.n_items)
        groups.append(group_arrays(plan, train, prev, rng.random(len(train)),
                                   rng.random(len(train))))
    step, = plan_steps(groups, list(range(len(sizes))), len(sizes), train.n_users,
                       train.n_items, row_pad(pad_numba), torch.device("cpu"))
    return step, rng, d


def test_recurrence_backward_matches_finite_differences():
    step, rng, d = _random_step(0, d=3, sizes=(20, 13))
    k, n_ent = 2, len(step.entry_state)
    dt = torch.float64
    entry = torch.tensor(rng.normal(size=(n_ent, d)), dtype=dt, requires_grad=True)
    w = torch.tensor(rng.normal(size=(k, 2 * d, 2 * d + 2)) * 0.5, dtype=dt, requires_grad=True)
    b = torch.tensor(rng.normal(size=(k, 2 * d)) * 0.1, dtype=dt, requires_grad=True)
    assert max(len(level) for level in step.rnn.levels) == 1  # the members padded alike
    slots = torch.cat([lg.new_u for lg in step.losses] + [lg.new_i for lg in step.losses])
    assert torch.autograd.gradcheck(   # the rows' outputs (padding rows: nobody reads them)
        lambda e, w_, b_: cascade(e, w_, b_, step.rnn, False).index_select(0, slots),
        (entry, w, b), fast_mode=True)


def test_numba_and_torch_recurrences_give_the_same_step():
    """The numba kernels (no padding) and the torch recurrence (blocks padded to 64 rows)
    compute every member's rows and gradients alike (to float rounding)."""
    outs = []
    for fast in (True, False):
        step, rng, d = _random_step(1, d=8, pad_numba=fast)
        k, n_ent = 3, len(step.entry_state)
        args = [torch.tensor(rng.normal(size=s), dtype=torch.float32)
                for s in [(n_ent, d), (k, 2 * d, 2 * d + 2), (k, 2 * d)]]
        xs = [a.clone().requires_grad_() for a in args]
        buf = cascade(*xs, step.rnn, fast)
        slots = torch.cat([lg.new_u for lg in step.losses] + [lg.new_i for lg in step.losses])
        up = torch.tensor(rng.normal(size=(len(slots), d)), dtype=torch.float32)
        (buf.index_select(0, slots) * up).sum().backward()
        outs.append([buf.index_select(0, slots).detach()] + [x.grad for x in xs])
    for x, y in zip(*outs):
        np.testing.assert_allclose(x.numpy(), y.numpy(), rtol=1e-5, atol=1e-5)


def test_plan_levels_reads_and_final_slots():
    train = _small_train(seed=4, n_users=12, n_items=7)
    pu = previous_rows(train.user)
    prev = np.where(pu >= 0, train.item[np.maximum(pu, 0)], -1)
    gptr = count_groups(len(train), 37)
    plan = make_plan(train.user, train.item, prev, gptr, train.n_users, train.n_items)
    for g in range(plan.n_groups):
        s, e = gptr[g], gptr[g + 1]
        rows = plan.order[s:e]
        assert sorted(rows) == list(range(s, e))
        n_ext = (plan.ext_user_ptr[g + 1] - plan.ext_user_ptr[g]
                 + plan.ext_item_ptr[g + 1] - plan.ext_item_ptr[g])
        base = n_ext + 1
        lp = plan.level_ptr[plan.level_group_ptr[g]:plan.level_group_ptr[g + 1]]
        slot_row = {}  # output slot -> (row, level)
        for lv in range(len(lp) - 1):
            for r in range(lp[lv], lp[lv + 1]):
                slot_row[base + 2 * r] = (rows[r], lv)
                slot_row[base + 2 * r + 1] = (rows[r], lv)
        ext_u = plan.ext_users[plan.ext_user_ptr[g]:plan.ext_user_ptr[g + 1]]
        ext_i = plan.ext_items[plan.ext_item_ptr[g]:plan.ext_item_ptr[g + 1]]
        for lv in range(len(lp) - 1):
            level_rows = rows[lp[lv]:lp[lv + 1]]
            assert len(set(train.user[level_rows])) == len(level_rows)
            assert len(set(train.item[level_rows])) == len(level_rows)
            for r in range(lp[lv], lp[lv + 1]):
                k = rows[r]
                # each read is the latest earlier write in time, or the group's entry state
                for slot, code, is_user, kind in [(plan.iu[s + r], train.user[k], True, "u"),
                                                  (plan.ii[s + r], train.item[k], False, "i"),
                                                  (plan.ip[s + r], prev[k], False, "p")]:
                    if kind == "p" and code < 0:
                        assert slot == n_ext
                        continue
                    col = train.user if is_user else train.item
                    earlier = [j for j in range(s, k) if col[j] == code]
                    if earlier:
                        src, src_lv = slot_row[slot]
                        assert src == earlier[-1] and src_lv < lv
                        assert (slot - base) % 2 == (0 if is_user else 1)
                    else:
                        assert slot < n_ext
                        assert (ext_u[slot] if slot < len(ext_u)
                                else ext_i[slot - len(ext_u)]) == code
        fin_u = plan.fin_user[plan.fin_user_ptr[g]:plan.fin_user_ptr[g + 1]]
        fin_us = plan.fin_user_slot[plan.fin_user_ptr[g]:plan.fin_user_ptr[g + 1]]
        for u, slot in zip(fin_u, fin_us):
            assert slot_row[slot][0] == max(j for j in range(s, e) if train.user[j] == u)


def test_timespan_groups_follow_the_authors_rule():
    # span = (9 - 0) / 3 = 3: a group closes at (and includes) the first row more than 3 after
    # the group's start time; the next start time is that row's time. t=4 closes [0..3] (start
    # 4), t=8 closes [4..6] (start 8), the rest is a final group.
    t = np.array([0, 1, 3, 4, 5, 7, 8, 9], dtype=float)
    assert timespan_groups(t, 3).tolist() == [0, 4, 7, 8]
    assert count_groups(5, 2).tolist() == [0, 2, 4, 5]


def test_grouping_changes_training_and_is_validated():
    from recaudit.errors import ConfigError

    with pytest.raises(ConfigError, match="grouping"):
        create("jodie", grouping="days")
    train = _small_train()
    a = create("jodie", epochs=1, embedding_dim=8).fit(train, seed=0)
    b = create("jodie", epochs=1, embedding_dim=8, grouping="timespan", n_spans=7).fit(train,
                                                                                     seed=0)
    assert b.plan_stats_["groups"] <= 8
    assert not np.array_equal(a.rank(train, k=5).items, b.rank(train, k=5).items) or \
        a.history_[0]["loss"] != b.history_[0]["loss"]
