"""checkpoint_gradients: closed-form output-layer gradients equal autograd's."""

import copy

import numpy as np
import pytest
import torch

from recaudit.models import create
from recaudit.models.sequential._samples import SequenceData, batch_from_queries
from recaudit.models.sequential._stack import Members
from recaudit.models.testing import leave_last_out, planted_log

CONFIGS = {
    "gru4rec": dict(epochs=4, embedding_dim=8, hidden_dim=8, checkpoint_every=2),
    "lstm": dict(epochs=4, embedding_dim=8, hidden_dim=8, checkpoint_every=2),
    "sasrec": dict(epochs=4, embedding_dim=8, checkpoint_every=2),
    "latentcross": dict(epochs=4, embedding_dim=8, hidden_dim=8, checkpoint_every=2),
    "tisasrec": dict(epochs=4, embedding_dim=8, checkpoint_every=2, time_span=8),
    "bert4rec": dict(epochs=4, embedding_dim=8, checkpoint_every=2, max_len=6),
}


def _autograd(model, net, batch, targets):
    """d loss / d (W, b) by autograd with the representation held fixed."""
    net.eval()
    with torch.no_grad():
        h = model._query_hidden(net, batch)
    w, b = (None if t is None else t[0] for t in net.output(Members.of(net)))  # a stack of 1
    w = w.detach().clone().requires_grad_(True)
    b = None if b is None else b.detach().clone().requires_grad_(True)
    out = []
    for r in range(len(h)):
        s = h[r] @ w.T + (0 if b is None else b)
        loss = torch.nn.functional.cross_entropy(s[None], targets[r:r + 1])
        grads = torch.autograd.grad(loss, [w] if b is None else [w, b])
        out.append(torch.cat([g.reshape(-1) for g in grads]).numpy())
    return np.stack(out)


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_checkpoint_gradients_match_autograd(name):
    train, queries = leave_last_out(planted_log(n_users=8, length=10, n_items=12))
    model = create(name, **CONFIGS[name]).fit(train, seed=3)
    assert len(model.checkpoints_) == 2
    rows = np.array([0, 5, 17, len(train) - 1])
    got = list(model.checkpoint_gradients(train, rows, queries))
    assert len(got) == 2
    data = SequenceData(train, model.config.max_len, "prefix")
    net = copy.deepcopy(model.network_)
    for (lr, g_train, g_test), (_, state) in zip(got, model.checkpoints_):
        assert lr == model.config.lr
        net.load_state_dict(state)
        tb = data.prefix_batch_for_rows(rows, "cpu", model.uses_time)
        # the training example of row r predicts train.item[r]
        assert np.array_equal(tb.targets[torch.arange(len(rows)), tb.lengths - 1].numpy(),
                              train.item[rows])
        exp_train = _autograd(model, net, tb, torch.tensor(train.item[rows], dtype=torch.long))
        qb = batch_from_queries(queries, model.config.max_len, "cpu", model.uses_time)
        exp_test = _autograd(model, net, qb, torch.tensor(queries.target, dtype=torch.long))
        assert g_train.shape == exp_train.shape and g_test.shape == exp_test.shape
        np.testing.assert_allclose(g_train, exp_train, rtol=1e-4, atol=1e-6)
        np.testing.assert_allclose(g_test, exp_test, rtol=1e-4, atol=1e-6)


def test_first_interaction_context_is_empty_and_context_respects_max_len():
    train, _ = leave_last_out(planted_log(n_users=3, length=9))
    data = SequenceData(train, 4, "prefix")
    indptr, rows = train.user_sequences()
    first, later = rows[indptr[0]], rows[indptr[0] + 6]
    b = data.prefix_batch_for_rows(np.array([first, later]), "cpu", False)
    assert b.items[0].tolist()[:1] == [0] and b.lengths[0] == 1
    seq = train.item[rows[indptr[0]:indptr[1]]]
    assert b.items[1, :4].tolist() == (seq[2:6] + 1).tolist()  # 4 items before position 6


def test_no_checkpoints_is_an_error():
    train, queries = leave_last_out(planted_log())
    m = create("gru4rec", epochs=1, embedding_dim=8, hidden_dim=8).fit(train, seed=0)
    with pytest.raises(ValueError, match="checkpoint_every"):
        next(m.checkpoint_gradients(train, np.array([0]), queries))
