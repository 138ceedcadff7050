"""JODIE's TracIn: prediction-layer gradients from a row-by-row replay and autograd."""

import numpy as np
import pytest
import torch
from torch import nn

from recaudit.data import synthetic, temporal_ratio_split
from recaudit.models import create
from recaudit.models.sequential._jodie._plan import previous_rows
from recaudit.perturb import tracin_scores

LAYER = ("w_user_dyn.weight", "w_user_dyn.bias", "w_prev_dyn.weight", "w_prev_static.weight",
         "w_user_static.weight")


@pytest.fixture(scope="module")
def fitted():
    log = synthetic(seed=4, n_users=30, n_items=20, n_clusters=6)
    split = temporal_ratio_split(log)
    model = create("jodie", epochs=4, embedding_dim=6, lr=0.01, batch_size=40,
                   checkpoint_every=2).fit(split.train, seed=2)
    return model, split.train, split.queries


def _grad(P, proj, p_dyn, u, p, target):
    """d ||ĵ - target||² / d (prediction layer), flattened in ``LAYER`` order (autograd)."""
    pred = (nn.functional.linear(proj, P["w_user_dyn.weight"], P["w_user_dyn.bias"])
            + P["w_prev_dyn.weight"] @ p_dyn + P["w_user_static.weight"][u]
            + P["w_prev_static.weight"][p + 1])
    grads = torch.autograd.grad(((pred - target) ** 2).sum(), [P[k] for k in LAYER])
    return torch.cat([g.reshape(-1) for g in grads]).numpy().astype(np.float64)


def reference_gradients(model, train, queries, state):
    """The checkpoint's weights replayed one row at a time in time order (the module
    docstring's recurrence), each row's and query's loss gradient by autograd."""
    # the checkpoint's one member as plain tensors
    P = {k: v[0].clone().requires_grad_(k in LAYER) for k, v in state.items()}

    def linear(name, x):
        return nn.functional.linear(x, P[f"{name}.weight"], P[f"{name}.bias"])

    d = model.config.embedding_dim
    t = train.timestamp.astype(np.float64)
    pu, pi = previous_rows(train.user), previous_rows(train.item)
    du = np.where(pu >= 0, t - t[np.maximum(pu, 0)], 0.0) / model.time_scale_
    di = np.where(pi >= 0, t - t[np.maximum(pi, 0)], 0.0) / model.time_scale_
    prev = np.where(pu >= 0, train.item[np.maximum(pu, 0)], -1)
    U = [P["init_user"].detach()] * train.n_users
    Ie = [P["init_item"].detach()] * train.n_items
    rows = []
    for k in range(len(train)):
        u, i, p = int(train.user[k]), int(train.item[k]), int(prev[k])
        up, ip = U[u], Ie[i]
        pdyn = Ie[p] if p >= 0 else torch.zeros(d)
        proj = up * (1 + linear("project", torch.tensor([du[k]], dtype=torch.float32)))
        target = torch.cat([ip, nn.functional.one_hot(torch.tensor(i), train.n_items).float()])
        rows.append(_grad(P, proj, pdyn, u, p, target))
        with torch.no_grad():
            U[u] = nn.functional.normalize(torch.tanh(linear(
                "user_rnn", torch.cat([up, ip, torch.tensor([du[k]], dtype=torch.float32)]))),
                dim=0)
            Ie[i] = nn.functional.normalize(torch.tanh(linear(
                "item_rnn", torch.cat([ip, up, torch.tensor([di[k]], dtype=torch.float32)]))),
                dim=0)
    last_time = {int(u): float(x) for u, x in zip(train.user, t)}  # rows in time order
    tests = []
    for q in range(len(queries)):
        u, y = int(queries.user[q]), int(queries.target[q])
        ctx = queries.context_item[queries.context_indptr[q]:queries.context_indptr[q + 1]]
        p = int(ctx[-1]) if len(ctx) else -1
        dt = max(float(queries.timestamp[q]) - last_time[u], 0.0) if u in last_time else 0.0
        proj = U[u] * (1 + linear("project", torch.tensor([dt / model.time_scale_],
                                                          dtype=torch.float32)))
        pdyn = Ie[p] if p >= 0 else torch.zeros(d)
        target = torch.cat([Ie[y], nn.functional.one_hot(torch.tensor(y), train.n_items)
                            .float()])
        tests.append(_grad(P, proj, pdyn, u, p, target))
    return np.stack(rows), np.stack(tests)


def test_tracin_scores_equal_autograd_over_a_row_by_row_replay(fitted):
    model, train, queries = fitted
    assert [lr for lr, _ in model.checkpoints_] == [0.01, 0.01]
    expected = np.zeros(len(train))
    for lr, state in model.checkpoints_:
        g_rows, g_tests = reference_gradients(model, train, queries, state)
        expected += lr * g_rows @ g_tests.sum(axis=0)
    got = tracin_scores(model, train, queries)
    np.testing.assert_allclose(got, expected, rtol=2e-4, atol=1e-5 * np.abs(expected).max())
    assert np.argmax(got) == np.argmax(expected)


def test_dense_gradients_agree_with_the_factored_scores(fitted):
    model, train, queries = fitted
    rows = np.array([7, 0, len(train) - 1, 7])
    dense = sum(lr * g_train.astype(np.float64) @ g_test.astype(np.float64).sum(axis=0)
                for lr, g_train, g_test in model.checkpoint_gradients(train, rows, queries))
    width = model.config.embedding_dim + train.n_items
    _, g_train, _ = next(model.checkpoint_gradients(train, rows, queries))
    assert g_train.shape == (4, width * (2 * model.config.embedding_dim + 1 + train.n_items + 1
                                         + train.n_users))
    np.testing.assert_allclose(tracin_scores(model, train, queries, rows), dense, rtol=1e-6)
    # the rows asked for, with repeats, in their order (float32 factors of other batches)
    np.testing.assert_allclose(tracin_scores(model, train, queries)[rows],
                               tracin_scores(model, train, queries, rows), rtol=1e-5)


def test_checkpoints_do_not_change_training():
    split = temporal_ratio_split(synthetic(seed=5, n_users=25, n_items=15, n_clusters=5))
    params = dict(epochs=3, embedding_dim=6, batch_size=30)
    plain = create("jodie", **params).fit(split.train, seed=1)
    kept = create("jodie", checkpoint_every=1, **params).fit(split.train, seed=1)
    assert len(plain.checkpoints_) == 0 and len(kept.checkpoints_) == 3
    assert plain.rank(split.queries, k=10).equals(kept.rank(split.queries, k=10))
    last = kept.checkpoints_[-1][1]
    for k, v in kept.network_.state_dict().items():
        assert torch.equal(v, last[k]), k


def test_tracin_refuses_another_log_and_a_model_without_checkpoints(fitted):
    model, train, queries = fitted
    with pytest.raises(ValueError, match="replays the log the model was fitted on"):
        tracin_scores(model, train.take(np.arange(len(train) - 1)), queries)
    split = temporal_ratio_split(synthetic(seed=5, n_users=25, n_items=15, n_clusters=5))
    bare = create("jodie", epochs=1, embedding_dim=4).fit(split.train, seed=0)
    with pytest.raises(ValueError, match="checkpoint_every"):
        tracin_scores(bare, split.train, split.queries)


def test_the_log_is_replayed_twice_per_checkpoint_whatever_the_chunks(fitted, monkeypatch):
    from recaudit.models.sequential._jodie import _tracin

    model, train, queries = fitted
    calls = []
    real = _tracin._walk
    monkeypatch.setattr(_tracin, "_walk", lambda *a: calls.append(1) or real(*a))
    tracin_scores(model, train, queries, chunk_size=5)
    assert len(calls) == 2 * len(model.checkpoints_)
