"""FINEST's pieces: the rank-preserving loss (closed forms), instance identity across edits,
simulated perturbations, training instances and reference lists (against ``rank``)."""

import numpy as np
import pytest
import torch

from recaudit.data import Interactions
from recaudit.errors import ConfigError
from recaudit.models import create
from recaudit.models.sequential._nn import deterministic_torch, set_dropout_generator
from recaudit.models.sequential._stack import padded
from recaudit.models.testing import leave_last_out, planted_log
from recaudit.perturb._edits import delete_rows, insert_after, replace_items
from recaudit.stabilise import match_rows, rank_preserving_loss, reference_lists, simulate
from recaudit.stabilise._finest_parts import instance_logits

T = torch.tensor


# ------------------------------------------------------------------ rank-preserving loss
def test_loss_closed_form():
    # items 0..4; reference top-2 = (0, 1), competitors (2, 3)
    s = T([[1.0, 0.95, 0.5, 0.96, 0.0]])
    top, comp = T([[0, 1]]), T([[2, 3]])
    # L_order = max(0, .1 - (1 - .95)) = .05; L_top = mean(max(0, .1 - .5), max(0, .1 + .01))
    expected = 0.05 + (0.0 + 0.11) / 2
    assert rank_preserving_loss(s, top, comp, 0.1).item() == pytest.approx(expected, abs=1e-6)


def test_loss_zero_when_margins_hold_and_its_gradient_only_moves_violators():
    s = T([[3.0, 2.0, 1.0, 0.0]], requires_grad=True)
    assert rank_preserving_loss(s, T([[0, 1]]), T([[2, 3]]), 0.5).item() == 0.0
    s2 = T([[3.0, 2.95, 1.0, 0.0]], requires_grad=True)  # only the order pair (0, 1) violates
    rank_preserving_loss(s2, T([[0, 1]]), T([[2, 3]]), 0.5).backward()
    assert s2.grad.tolist() == [[-1.0, 1.0, 0.0, 0.0]]  # raise s_0, lower s_1, nothing else


def test_loss_k1_has_no_order_term_and_averages_instances():
    s = T([[0.0, 0.0], [1.0, 0.0]])
    # instance 0: max(0, .2 - 0) = .2; instance 1: max(0, .2 - 1) = 0 -> mean .1
    assert rank_preserving_loss(s, T([[0], [0]]), T([[1], [1]]), 0.2).item() == \
        pytest.approx(0.1)
    empty = rank_preserving_loss(torch.zeros(0, 3), torch.zeros(0, 1, dtype=torch.long),
                                 torch.zeros(0, 1, dtype=torch.long), 0.1)
    assert empty.item() == 0.0


# ------------------------------------------------------------------ instance identity
def _log():
    return planted_log(n_users=6, n_items=12, length=8, seed=3)


def test_match_rows_follows_rows_through_every_edit():
    log = _log()
    assert np.array_equal(match_rows(log, log), np.arange(len(log)))
    rows = np.array([1, 7, 20])
    deleted, _ = delete_rows(log, rows)
    keep = np.setdiff1d(np.arange(len(log)), rows)
    assert np.array_equal(match_rows(log, deleted), keep)
    replaced, _ = replace_items(log, rows, np.random.default_rng(0))
    m = match_rows(log, replaced)
    assert (m[rows] == -1).all() and np.array_equal(np.delete(m, rows), keep)
    inserted, rec = insert_after(log, rows, np.random.default_rng(0))
    m = match_rows(log, inserted)
    assert (m == -1).sum() == len(rows)
    assert np.array_equal(np.sort(m[m >= 0]), np.arange(len(log)))
    # each matched row is the same interaction
    ok = m >= 0
    assert np.array_equal(inserted.item[ok], log.item[m[ok]])
    assert np.array_equal(inserted.user[ok], log.user[m[ok]])


def test_match_rows_tells_equal_interactions_apart_by_occurrence():
    a = Interactions.from_codes([0, 0, 0, 1], [2, 2, 3, 2], [5, 5, 6, 5], n_users=2, n_items=4)
    b = a.take(np.array([1, 2, 3]))  # drop the first of the two equal rows
    assert match_rows(a, b).tolist() == [0, 2, 3]  # the survivor is "the first (0, 2, 5)" now


def test_simulate_edits_floor_ratio_rows_and_is_seeded():
    log = _log()
    n = int(0.1 * len(log))
    out = simulate(log, np.random.default_rng(1), 0.1, ("delete",))
    assert len(out) == len(log) - n
    out = simulate(log, np.random.default_rng(1), 0.1, ("insert",))
    assert len(out) == len(log) + n
    out = simulate(log, np.random.default_rng(1), 0.1, ("replace",))
    assert (match_rows(log, out) == -1).sum() == n
    a = simulate(log, np.random.default_rng(7), 0.1, ("delete", "replace", "insert"))
    b = simulate(log, np.random.default_rng(7), 0.1, ("delete", "replace", "insert"))
    assert a.fingerprint() == b.fingerprint()
    assert simulate(log, np.random.default_rng(1), 0.001, ("delete",)) is log  # floor(.) = 0


# ------------------------------------------------------------------ training instances
CASES = {
    "lstm-window": ("lstm", dict(embedding_dim=8, hidden_dim=8)),
    "lstm-prefix": ("lstm", dict(embedding_dim=8, hidden_dim=8, samples="prefix")),
    "lstm-casper": ("lstm", dict(embedding_dim=8, hidden_dim=8, samples="prefix",
                                 first_samples=True, pad_left=True, max_len=6)),
    "sasrec": ("sasrec", dict(embedding_dim=8, max_len=5)),
    "tisasrec": ("tisasrec", dict(embedding_dim=8, max_len=5, time_span=8)),
    "latentcross": ("latentcross", dict(embedding_dim=8, hidden_dim=8)),
    "gru4rec": ("gru4rec", dict(embedding_dim=8, hidden_dim=8)),
    "bert4rec": ("bert4rec", dict(embedding_dim=8, max_len=5, layers=1)),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_instances_reproduce_the_models_loss_and_point_at_their_context(case):
    name, params = CASES[case]
    train, _ = leave_last_out(_log())
    model = create(name, epochs=1, batch_size=4, **params).fit(train, seed=0)
    net = model.network_
    data = model._make_data(train)
    ids = np.arange(min(4, len(data)))
    with deterministic_torch(1, "cpu"):
        net.train()  # dropout on: both losses must draw the same masks
        batch = data.batch(ids, "cpu", model.uses_time)
        set_dropout_generator(net, torch.Generator().manual_seed(5))
        loss, logits, pos = instance_logits(model, net, data, ids, batch,
                                            np.random.default_rng(9))
        net.eval()  # no dropout: the instances' scores are the scores rank serves
        _, served, _ = instance_logits(model, net, data, ids, batch, np.random.default_rng(9))
        queried = model.query_scores(net, batch)
    if name == "bert4rec":  # the loss also covers the Cloze positions; the scores do not
        torch.testing.assert_close(served, queried)
    else:  # bit-identical: the training loss is the mean cross-entropy of the instances (its
        # sum over the rows padded to a multiple of 64 with ignored targets, over their count)
        ce = torch.nn.functional.cross_entropy(logits, batch.sel_targets, reduction="none")
        rows = torch.cat([ce, ce.new_zeros(padded(len(ce)) - len(ce))])
        assert loss.item() == (rows.sum() / len(ce)).item()
    assert logits.shape[1] == train.n_items and len(pos) == len(logits)
    # the instance at position p predicts the item after p, from a context ending with p's item
    has = pos >= 0
    nxt = data.item[pos[has] + 1]
    if name == "bert4rec":
        last = batch.host_lengths - 1
        assert np.array_equal(batch.items.numpy()[np.arange(len(ids)), last] - 1, data.item[pos])
        assert np.array_equal(batch.targets.numpy()[np.arange(len(ids)), last], nxt)
    else:
        assert np.array_equal(batch.sel_targets.numpy()[has], nxt)
        flat = batch.items.numpy().reshape(-1)[batch.sel.numpy()]
        assert np.array_equal(flat[has] - 1, data.item[pos[has]])
        assert (flat[~has] == 0).all()  # an empty context (first_samples) has no last item


def test_reference_lists_are_the_lists_rank_serves_after_each_interaction():
    train, _ = leave_last_out(_log())
    model = create("lstm", epochs=2, embedding_dim=8, hidden_dim=8).fit(train, seed=0)
    ref = reference_lists(model, train, 3)
    indptr, rows = train.user_sequences()
    for u in range(train.n_users):
        seq = rows[indptr[u]:indptr[u + 1]]
        assert not ref.has[seq[-1]]  # a user's last row has no next item in training
        for j in (0, len(seq) // 2, len(seq) - 2):
            sub = train.take(seq[:j + 1])  # the user's history up to row seq[j]
            lists = model.rank(sub, k=6).items[0]
            assert ref.has[seq[j]]
            assert np.array_equal(ref.top[seq[j]], lists[:3])
            assert np.array_equal(ref.comp[seq[j]], lists[3:])


def test_reference_lists_need_twice_topk_items():
    train, _ = leave_last_out(_log())
    model = create("lstm", epochs=1, embedding_dim=8, hidden_dim=8).fit(train, seed=0)
    with pytest.raises(ConfigError, match="topk") as exc:
        reference_lists(model, train, 7)  # 12 items < 14
    assert exc.value.key == "topk"
