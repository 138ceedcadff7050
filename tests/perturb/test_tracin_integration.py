"""TracIn with a built-in model (GRU4Rec fitted with checkpoints)."""

import numpy as np
import pytest

from recaudit.perturb import SupportsTracIn, parse, tracin_scores

models = pytest.importorskip("recaudit.models")
testing = pytest.importorskip("recaudit.models.testing")


@pytest.fixture(scope="module", params=["gru4rec", "lstm"])  # without / with an output bias
def fitted(request):
    train, queries = testing.leave_last_out(testing.planted_log(n_users=8, length=8,
                                                                n_items=10))
    model = models.create(request.param, epochs=4, embedding_dim=8, hidden_dim=8,
                          checkpoint_every=2).fit(train, seed=1)
    return model, train, queries


def test_scores_are_the_checkpoint_sum(fitted):
    model, train, queries = fitted
    assert isinstance(model, SupportsTracIn) and hasattr(model, "checkpoint_factors")
    got = tracin_scores(model, train, queries, chunk_size=7)  # the factored form
    rows = np.arange(len(train))
    expected = sum(lr * g_tr @ g_te.sum(axis=0)
                   for lr, g_tr, g_te in model.checkpoint_gradients(train, rows, queries))
    assert np.allclose(got, expected, rtol=1e-5, atol=1e-10)  # model grads are float32
    # the influence on the test set is the sum of the influences on each test query
    per_query = sum(tracin_scores(model, train, queries.subset(np.array([q])))
                    for q in range(len(queries)))
    assert np.allclose(got, per_query, rtol=1e-6, atol=1e-9)
    assert np.any(got != 0)


def test_tracin_spec_deletes_the_most_influential(fitted):
    model, train, queries = fitted
    scores = tracin_scores(model, train, queries)
    out, rec = parse("tracin-delete").apply(train, np.random.default_rng(0), model=model,
                                            queries=queries)
    assert rec.rows == (int(np.argmax(scores)),) and len(out) == len(train) - 1
    assert rec.scores[0] == pytest.approx(scores.max())
