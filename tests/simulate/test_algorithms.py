"""DeepFM, LambdaFM, SetRank, DNN, GRU: they learn a known signal, repeat under a seed, and
SetRank is permutation-equivariant."""

from __future__ import annotations

import numpy as np
import pytest

from recaudit import simulate as metrics
from recaudit.simulate import DNN, GRU, DeepFM, LambdaFM, SetRank, TrainConfig

CFG = TrainConfig(epochs=15, batch_size=64, lr=1e-2)


def _slates(n=400, k=3, seed=0):
    """Click iff the document's first feature is the slate's largest (a list-wise signal)."""
    rng = np.random.default_rng(seed)
    docs = rng.random((n, k, 2))
    users = np.ones((n, 1))
    clicks = (docs[:, :, 0] == docs[:, :, 0].max(axis=1, keepdims=True)).astype(float)
    return users, docs, clicks


@pytest.mark.parametrize("cls", [DeepFM, LambdaFM, SetRank])
def test_slate_models_learn_and_repeat(cls):
    users, docs, clicks = _slates()
    m1 = cls(CFG).fit(users, docs, clicks, seed=3)
    m2 = cls(CFG).fit(users, docs, clicks, seed=3)
    tu, td, tc = _slates(200, seed=1)
    s1, s2 = m1.score(tu, td), m2.score(tu, td)
    np.testing.assert_array_equal(s1, s2)  # bit-identical under the same seed
    assert metrics.click_ndcg(s1, tc) > 0.9  # random order gives about 0.64
    s3 = cls(CFG).fit(users, docs, clicks, seed=4).score(tu, td)
    assert not np.array_equal(s1, s3)


def test_setrank_is_permutation_equivariant_and_uses_context():
    users, docs, clicks = _slates()
    m = SetRank(CFG).fit(users, docs, clicks, seed=0)
    perm = [2, 0, 1]
    s = m.score(users[:5], docs[:5])
    sp = m.score(users[:5], docs[:5][:, perm])
    np.testing.assert_allclose(sp, s[:, perm], rtol=1e-5, atol=1e-5)
    # the same document scores differently next to different companions (set context)
    a = docs[:1].copy()
    b = a.copy()
    b[0, 1:, 0] = 0.99
    assert not np.isclose(m.score(users[:1], a)[0, 0], m.score(users[:1], b)[0, 0])


def test_unfitted_models_raise():
    with pytest.raises(RuntimeError, match="fit"):
        DeepFM().score(np.ones((1, 1)), np.ones((1, 3, 2)))
    with pytest.raises(ValueError, match="clicks"):
        DeepFM(CFG).fit(np.ones((4, 1)), np.ones((4, 3, 2)), np.ones((4, 2)), seed=0)


def _sequences(n=600, m=4, seed=0):
    """Click iff the candidate's topic equals the last history topic (needs the history)."""
    rng = np.random.default_rng(seed)
    feats = np.eye(m)
    hist = [rng.integers(0, m, size=rng.integers(1, 4)).tolist() for _ in range(n)]
    docs = rng.integers(0, m, size=n)
    clicks = np.array([float(d == h[-1]) for d, h in zip(docs, hist)])
    return np.full((n, 1), 0.5), feats[docs], hist, clicks, feats


def test_gru_uses_history_and_dnn_cannot():
    users, docs, hist, clicks, feats = _sequences()
    tu, td, th, tc, _ = _sequences(300, seed=1)
    gru = GRU(CFG).fit(users, docs, hist, clicks, feats, seed=0)
    dnn = DNN(CFG).fit(users, docs, hist, clicks, feats, seed=0)
    a_gru = metrics.auc(gru.score(tu, td[:, None, :], th)[:, 0], tc)
    a_dnn = metrics.auc(dnn.score(tu, td[:, None, :], th)[:, 0], tc)
    assert a_gru > 0.9
    assert a_dnn < 0.65
    import torch

    torch.rand(5)  # disturb the global generator: training must not depend on it
    again = GRU(CFG).fit(users, docs, hist, clicks, feats, seed=0)
    np.testing.assert_array_equal(again.score(tu, td[:, None, :], th),
                                  gru.score(tu, td[:, None, :], th))


def test_early_stopping_keeps_the_gru_from_memorising_noise():
    """Clicks independent of everything: a GRU trained 40 epochs memorises the training
    histories (held-out log loss far above ln 2, the loss of predicting the base rate); with
    early stopping on a held-out part it stops within a few epochs near ln 2."""
    import math

    import torch
    import torch.nn.functional as F

    rng = np.random.default_rng(0)
    feats = np.eye(5)
    n = 1500
    hist = [rng.integers(0, 5, size=rng.integers(0, 8)).tolist() for _ in range(n)]
    users, docs = rng.random((n, 5)), feats[rng.integers(0, 5, size=n)]
    clicks = (rng.random(n) < 0.5).astype(float)
    tr, te = np.arange(1000), np.arange(1000, n)

    def held_out_loss(model):
        s = model.score(users[te], docs[te][:, None, :], [hist[i] for i in te])[:, 0]
        return float(F.binary_cross_entropy_with_logits(torch.tensor(s),
                                                        torch.tensor(clicks[te])))

    def fit(cfg):
        return GRU(cfg).fit(users[tr], docs[tr], [hist[i] for i in tr], clicks[tr], feats, seed=1)

    full = fit(TrainConfig(epochs=40, lr=1e-2))
    stopped = fit(TrainConfig(epochs=40, lr=1e-2, patience=2))
    assert full.epochs_ == 40 and stopped.epochs_ < 15
    assert held_out_loss(full) > math.log(2) + 0.05
    assert held_out_loss(stopped) < math.log(2) + 0.02
    # the kept weights are the best epoch's: their loss on the held-out rows (the first
    # round(0.1 n) of the model generator's first permutation) is the recorded best loss
    from recaudit.seeds import make_torch_generator

    val = torch.randperm(1000, generator=make_torch_generator(1, "mirror", "GRU"))[:100].numpy()
    s = stopped.score(users[tr][val], docs[tr][val][:, None, :], [hist[i] for i in val])[:, 0]
    loss = float(F.binary_cross_entropy_with_logits(torch.tensor(s),
                                                    torch.tensor(clicks[tr][val])))
    assert loss == pytest.approx(stopped.val_loss_, abs=1e-5)


def test_train_config_validation_and_slate_models_refuse_early_stopping():
    with pytest.raises(ValueError, match="patience"):
        TrainConfig(patience=0)
    with pytest.raises(ValueError, match="val_fraction"):
        TrainConfig(val_fraction=1.0)
    users, docs, clicks = _slates(50)
    with pytest.raises(ValueError, match="sequential models"):
        DeepFM(TrainConfig(epochs=1, patience=2)).fit(users, docs, clicks, seed=0)
    m = DNN(TrainConfig(epochs=3)).fit(np.ones((20, 1)), np.eye(2)[np.arange(20) % 2],
                                       [[]] * 20, np.arange(20) % 2, np.eye(2), seed=0)
    assert m.epochs_ == 3 and not hasattr(m, "val_loss_")
    with pytest.raises(ValueError, match="too few"):
        DNN(TrainConfig(epochs=3, patience=1)).fit(np.ones((1, 1)), np.eye(2)[:1], [[]], [1.0],
                                                   np.eye(2), seed=0)
