"""LatentCross over each user's whole history (``samples="history"``, Oh et al. 2022's
training): against a row-by-row reference written from the docstring's equations, the packed
layout, the states a query is ranked from, TracIn's factors, the conformance kit."""

import copy

import numpy as np
import pytest
import torch
from torch import nn

from recaudit.data import Queries, synthetic, temporal_ratio_split
from recaudit.errors import ConfigError
from recaudit.models import create
from recaudit.models.sequential._history import _layout, count_groups, group_layouts, row_gaps
from recaudit.models.testing import (RecommenderConformance, check_learns, leave_last_out,
                                     planted_log)

TINY = dict(epochs=2, embedding_dim=16, hidden_dim=16, batch_size=64, samples="history")


class TestLatentCrossHistory(RecommenderConformance):
    def make_model(self):
        return create("latentcross", **TINY)


class TestLatentCrossHistoryBatched(RecommenderConformance):
    """The GPU's recurrence (padded levels, ``_levels``) on the CPU."""

    def make_model(self):
        return create("latentcross", recurrence="batched", **TINY)


def test_learns_planted_sequence():
    mrr, pop = check_learns(lambda: create("latentcross", samples="history", epochs=10,
                                           embedding_dim=32, hidden_dim=32, batch_size=32,
                                           lr=0.01), margin=2.0)
    assert mrr > 2.0 * pop


def _bucket(gap, n):
    return int(min(n - 1, np.floor(np.log2(1.0 + max(gap, 0.0)))))


def _gru_step(gru, x, h):
    """The textbook GRU cell (Cho et al. 2014, PyTorch's gate order r, z, n) of a stack of
    one's only member."""
    wi, wh, bi, bh = (p[0] for p in (gru.weight_ih_l0, gru.weight_hh_l0, gru.bias_ih_l0,
                                     gru.bias_hh_l0))
    gi, gh = x @ wi.T + bi, h @ wh.T + bh
    H = h.shape[-1]
    r = torch.sigmoid(gi[..., :H] + gh[..., :H])
    z = torch.sigmoid(gi[..., H:2 * H] + gh[..., H:2 * H])
    n = torch.tanh(gi[..., 2 * H:] + r * gh[..., 2 * H:])
    return (1 - z) * n + z * h


def _row_o(net, h, gap, nb):
    return h * (1.0 + net.ctx_out.weight[0][_bucket(gap, nb)])


def _row_x(net, item, gap, nb):
    return net.embedding.weight[0][item + 1] * (1.0 + net.ctx_in.weight[0][_bucket(gap, nb)])


def _lin(layer, x):
    """A linear layer of a stack of one's only member."""
    return x @ layer.weight[0].T + layer.bias[0]


def _scores(net, o):
    return _lin(net.out, torch.relu(_lin(net.dense, o)))


def reference_epoch(model, net, train, opt):
    """One epoch as the docstring writes it, one row at a time in time order; returns the
    mean loss. States restart at zero; they are detached at each group's start."""
    cfg = model.config
    nb = cfg.time_buckets
    gaps = row_gaps(train.user, train.timestamp)
    state = [torch.zeros(cfg.hidden_dim) for _ in range(train.n_users)]
    gptr = count_groups(len(train), cfg.batch_size)
    total = 0.0
    for g in range(len(gptr) - 1):
        state = [s.detach() for s in state]
        losses = []
        for k in range(gptr[g], gptr[g + 1]):
            u, i = int(train.user[k]), int(train.item[k])
            o = _row_o(net, state[u], gaps[k], nb)
            s = _scores(net, o)
            losses.append(nn.functional.cross_entropy(s[None], torch.tensor([i])))
            state[u] = _gru_step(net.gru, _row_x(net, i, gaps[k], nb), state[u])
        loss = torch.stack(losses).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        total += loss.item() * len(losses)
    return total / len(train)


def _fresh_net(model, train, seed):
    """The model's initial network (fitting for 0 epochs is not allowed: take the init)."""
    from recaudit.models.sequential._nn import materialize
    from recaudit.seeds import make_torch_generator

    return materialize(model._network(train.n_items),
                       [make_torch_generator(seed, "latentcross", "init")],
                       torch.device("cpu"), model._init_rule())


@pytest.mark.parametrize("recurrence", ["native", "batched"])
def test_training_equals_the_row_by_row_reference(recurrence):
    train = temporal_ratio_split(synthetic(seed=2, n_users=25, n_items=30)).train
    params = dict(epochs=2, embedding_dim=8, hidden_dim=8, batch_size=37, dropout=0.0,
                  samples="history", lr=0.01, recurrence=recurrence)
    model = create("latentcross", **params).fit(train, seed=4)
    ref = create("latentcross", **params)
    net = _fresh_net(ref, train, seed=4)
    opt = torch.optim.Adam(net.parameters(), lr=0.01, foreach=False)
    losses = [reference_epoch(ref, net, train, opt) for _ in range(2)]
    np.testing.assert_allclose([h["loss"] for h in model.history_], losses, rtol=1e-5)
    for (name, got), want in zip(model.network_.state_dict().items(),
                                 net.state_dict().values()):
        np.testing.assert_allclose(got.numpy(), want.detach().numpy(), rtol=1e-4, atol=1e-5,
                                   err_msg=name)


def test_packed_layout_of_a_group():
    owner = np.array([7, 3, 7, 7, 5, 3])  # rows of one group, in time order
    order, seqs, sizes, before, step = _layout(owner)
    assert seqs.tolist() == [7, 3, 5]              # by decreasing count, then first row
    assert sizes.tolist() == [3, 2, 1]             # users active at levels 0, 1, 2
    assert order.tolist() == [0, 1, 4, 2, 5, 3]    # packed: level 0 (7, 3, 5), level 1, ...
    assert step.tolist() == [0, 0, 0, 1, 1, 2]
    # input states: level 0 reads h0 of its sequence; later levels the previous output
    # (indices into [h0 (3 rows) ; packed outputs])
    assert before.tolist() == [0, 1, 2, 3 + 0, 3 + 1, 3 + 3]


def test_group_layouts_cover_every_row_once():
    train = temporal_ratio_split(synthetic(seed=1, n_users=40, n_items=20)).train
    gptr = count_groups(len(train), 50)
    rows = np.concatenate([g.rows for g in group_layouts(train.user, gptr)])
    assert sorted(rows.tolist()) == list(range(len(train)))


def _fitted(seed=0, **extra):
    log = synthetic(seed=5, n_users=20, n_items=15)
    sp = temporal_ratio_split(log, 0.8)
    params = dict(epochs=2, embedding_dim=8, hidden_dim=8, batch_size=30, samples="history")
    params.update(extra)
    return sp, create("latentcross", **params).fit(sp.train, seed=seed)


def _user_state(net, train, u, nb):
    """State after user ``u``'s whole training sequence (textbook GRU, final weights)."""
    rows = np.flatnonzero(train.user == u)
    h = torch.zeros(net.gru.hidden_size)
    prev = None
    for r in rows:
        gap = 0.0 if prev is None else float(train.timestamp[r] - prev)
        h = _gru_step(net.gru, _row_x(net, int(train.item[r]), gap, nb), h)
        prev = float(train.timestamp[r])
    return h, prev


def test_end_states_are_the_final_network_over_the_whole_history():
    sp, model = _fitted()
    net = model.network_
    with torch.no_grad():
        for u in range(sp.train.n_users):
            want, _ = _user_state(net, sp.train, u, model.config.time_buckets)
            np.testing.assert_allclose(model.user_state_[u].numpy(), want.numpy(), rtol=1e-4,
                                       atol=1e-6)


def test_a_query_advances_over_the_test_items_before_it():
    sp, model = _fitted()
    net, nb = model.network_, model.config.time_buckets
    q = sp.queries
    lens = q.lengths()
    j = int(np.flatnonzero(lens == lens.max())[-1])  # a user's later test query
    u = int(q.user[j])
    with torch.no_grad():
        h, last = _user_state(net, sp.train, u, nb)
        ctx_t, ctx_i = q.context_time[q.context_indptr[j]:q.context_indptr[j + 1]], q.context(j)
        later = ctx_t > last
        assert later.any()  # the query follows earlier test items of its user
        for item, t in zip(ctx_i[later], ctx_t[later]):
            h = _gru_step(net.gru, _row_x(net, int(item), float(t - last), nb), h)
            last = float(t)
        o = _row_o(net, h, float(q.timestamp[j] - last), nb)
        want = _scores(net, o).numpy()
    got = model.score(q.subset(np.array([j])))[0]
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


def test_a_user_without_training_rows_starts_from_zero():
    sp, model = _fitted()
    q = Queries(np.array([0]), np.array([0, 0]), np.zeros(0, np.int32), np.zeros(0),
                np.array([-1]), np.array([1e9]), sp.queries.n_items, sp.queries.n_users)
    model.user_state_[0] = 0.0
    model.user_last_time_[0] = np.nan
    net = model.network_
    with torch.no_grad():
        want = _scores(net, torch.zeros(8) * (1 + net.ctx_out.weight[0][0]))
    np.testing.assert_allclose(model.score(q)[0], want.numpy(), rtol=1e-5, atol=1e-6)


def test_checkpoint_factors_are_the_loss_gradients_at_each_row():
    train, queries = leave_last_out(planted_log(n_users=8, length=10, n_items=12))
    model = create("latentcross", epochs=4, embedding_dim=8, hidden_dim=8, batch_size=16,
                   samples="history", checkpoint_every=2).fit(train, seed=3)
    rows = np.array([0, 5, 17, len(train) - 1])
    got = list(model.checkpoint_gradients(train, rows, queries))
    assert len(got) == 2
    gaps = row_gaps(train.user, train.timestamp)
    nb = model.config.time_buckets
    net = copy.deepcopy(model.network_)
    for (lr, g_train, g_test), (_, state) in zip(got, model.checkpoints_):
        net.load_state_dict(state)
        want = []
        with torch.no_grad():
            hs = {}
            for r in range(len(train)):  # states before every row, one row at a time
                u = int(train.user[r])
                h = hs.get(u, torch.zeros(8))
                if r in rows:
                    want.append((torch.relu(_lin(net.dense, _row_o(net, h, gaps[r], nb))),
                                 int(train.item[r])))
                hs[u] = _gru_step(net.gru, _row_x(net, int(train.item[r]), gaps[r], nb), h)
        for (h, y), g in zip(want, g_train):
            w = net.out.weight[0].detach().clone().requires_grad_(True)
            b = net.out.bias[0].detach().clone().requires_grad_(True)
            loss = nn.functional.cross_entropy((h @ w.T + b)[None], torch.tensor([y]))
            exp = torch.cat([x.reshape(-1) for x in torch.autograd.grad(loss, [w, b])])
            np.testing.assert_allclose(g, exp.numpy(), rtol=1e-4, atol=1e-6)
        assert g_test.shape == (len(queries), g_train.shape[1]) and lr == model.config.lr


def test_history_needs_temporal_batches_and_finest_refuses_it():
    with pytest.raises(ConfigError, match="temporal"):
        create("latentcross", samples="history", batch_order="shuffled")
    from recaudit.stabilise import stabilise

    with pytest.raises(ConfigError, match="history"):
        stabilise(lambda: create("latentcross", samples="history"), {"method": "finest"})


def test_the_paper_preset_trains_over_the_whole_history():
    m = create("latentcross@oh2022")
    assert m.config.samples == "history" and m.config.batch_order == "temporal"
    assert m.config.epochs == 50 and m.config.lr == 0.001 and m.config.embedding_dim == 128


def test_tracin_passes_over_the_history_once_per_checkpoint(monkeypatch):
    """The stream replays the history once per checkpoint, however many chunks the rows
    take (the per-chunk protocol replayed it once per chunk); the scores do not change."""
    from recaudit.models.sequential._latentcross import LatentCross
    from recaudit.perturb import tracin_scores

    train, queries = leave_last_out(planted_log(n_users=8, length=10, n_items=12))
    model = create("latentcross", epochs=4, embedding_dim=8, hidden_dim=8, batch_size=16,
                   samples="history", checkpoint_every=2).fit(train, seed=3)
    calls = []
    real = LatentCross._pass
    monkeypatch.setattr(LatentCross, "_pass", lambda self, *a, **k: calls.append(1)
                        or real(self, *a, **k))
    chunked = tracin_scores(model, train, queries, chunk_size=7)
    assert len(calls) == 2 and -(-len(train) // 7) > 2
    np.testing.assert_allclose(chunked, tracin_scores(model, train, queries), rtol=1e-5)


@pytest.mark.parametrize("recurrence,level_rows", [("native", 8), ("batched", 8),
                                                   ("batched", 1)])
def test_a_member_of_sixteen_trains_as_it_does_alone(recurrence, level_rows, monkeypatch):
    """An audit-like stack (one seed, each log one or two random rows short, so the members'
    groups differ from the deleted rows on): members 0, 9 and 15 of a stack of 16 and member 1 of a
    stack of 3 end bit for bit as the same trials alone (losses, parameters, scores). Groups
    of 48 rows, a multiple of 16, so that members share passes (``_stack.pass_key``). With
    levels of one row (``LEVEL_ROWS = 1``) the batched levels split into groups of equal width
    at many steps."""
    from recaudit.models.sequential._latentcross import _levels
    from recaudit.models.sequential import fit_stack

    monkeypatch.setattr(_levels, "LEVEL_ROWS", level_rows)
    train, queries = leave_last_out(synthetic(seed=5, n_users=40, n_items=50))
    rng = np.random.default_rng(1)
    rows = np.arange(len(train))
    logs = [train.take(np.delete(rows, rng.choice(len(train), 1 + i % 2, replace=False)))
            for i in range(16)]          # one or two rows short: the last groups' sizes differ
    params = dict(epochs=2, embedding_dim=8, hidden_dim=8, batch_size=48, samples="history",
                  recurrence=recurrence, dropout=0.3)
    splits = []
    real = _levels._plan_levels

    def counted(*args):
        plan = real(*args)
        splits.append(sum(groups[0][0] is not None for _, groups in plan.levels))
        return plan

    monkeypatch.setattr(_levels, "_plan_levels", counted)
    sixteen = fit_stack([create("latentcross", **params) for _ in logs], logs, [7] * 16)
    three = fit_stack([create("latentcross", **params) for _ in logs[:3]], logs[:3], [7] * 3)
    assert (sum(splits) > 10) == (recurrence == "batched" and level_rows == 1)
    for i, member in [(0, sixteen[0]), (9, sixteen[9]), (15, sixteen[15]), (1, three[1])]:
        alone = create("latentcross", **params).fit(logs[i], seed=7)
        assert [h["loss"] for h in alone.history_] == [h["loss"] for h in member.history_]
        for name, v in alone.network_.state_dict().items():
            assert torch.equal(v, member.network_.state_dict()[name]), f"member {i}: {name}"
        assert torch.equal(alone.user_state_, member.user_state_)
        assert np.array_equal(alone.score(queries), member.score(queries))
    assert not np.array_equal(sixteen[0].score(queries), sixteen[15].score(queries))


@pytest.mark.parametrize("recurrence", ["native", "batched"])
def test_the_same_seed_gives_the_same_lists(recurrence):
    train, queries = leave_last_out(synthetic(seed=2, n_users=25, n_items=30))
    params = dict(TINY, recurrence=recurrence)
    a, b = (create("latentcross", **params).fit(train, seed=11) for _ in range(2))
    assert np.array_equal(a.rank(queries, k=10).items, b.rank(queries, k=10).items)
    assert np.array_equal(a.score(queries), b.score(queries))
