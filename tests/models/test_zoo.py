"""Every built-in sequential model: conformance kit, learning, model-specific maths."""

import numpy as np
import pytest
import torch

from recaudit.errors import ConfigError
from recaudit.models import available, create
from recaudit.models.testing import (RecommenderConformance, check_learns, leave_last_out,
                                     planted_log)

TINY = {
    "lstm": dict(epochs=2, embedding_dim=16, hidden_dim=16, batch_size=64),
    "sasrec": dict(epochs=2, embedding_dim=16, batch_size=16),
    "tisasrec": dict(epochs=2, embedding_dim=16, batch_size=16, time_span=16),
    "bert4rec": dict(epochs=2, embedding_dim=16, batch_size=16, max_len=10, layers=1),
    "latentcross": dict(epochs=2, embedding_dim=16, hidden_dim=16, batch_size=64),
    "jodie": dict(epochs=2, embedding_dim=16, batch_size=64),
}


def test_all_sequential_models_registered():
    assert {"gru4rec", "lstm", "sasrec", "tisasrec", "bert4rec", "jodie",
            "latentcross"} <= set(available())


class TestLSTM(RecommenderConformance):
    def make_model(self):
        return create("lstm", **TINY["lstm"])


class TestSASRec(RecommenderConformance):
    def make_model(self):
        return create("sasrec", **TINY["sasrec"])


class TestSASRecPrefixTemporal(RecommenderConformance):
    def make_model(self):
        return create("sasrec", **TINY["sasrec"], samples="prefix", batch_order="temporal",
                      heads=2)


class TestTiSASRec(RecommenderConformance):
    def make_model(self):
        return create("tisasrec", **TINY["tisasrec"])


class TestBERT4Rec(RecommenderConformance):
    def make_model(self):
        return create("bert4rec", **TINY["bert4rec"])


class TestLatentCross(RecommenderConformance):
    def make_model(self):
        return create("latentcross", **TINY["latentcross"])


class TestJODIE(RecommenderConformance):
    def make_model(self):
        return create("jodie", **TINY["jodie"])

    def make_log(self):
        return planted_log(n_users=20, length=12)


LEARN = {
    "lstm": dict(epochs=15, embedding_dim=32, hidden_dim=32, batch_size=4, lr=0.01),
    "sasrec": dict(epochs=15, embedding_dim=32, batch_size=8, lr=0.01),
    "tisasrec": dict(epochs=15, embedding_dim=32, batch_size=8, lr=0.01),
    "bert4rec": dict(epochs=30, embedding_dim=32, batch_size=16, lr=0.005, max_len=8, layers=1,
                     heads=1, dropout=0.0),
    "latentcross": dict(epochs=10, embedding_dim=32, hidden_dim=32, batch_size=32, lr=0.01),
    "jodie": dict(epochs=8, embedding_dim=32, batch_size=32, lr=0.01),
}


@pytest.mark.parametrize("name", sorted(LEARN))
def test_learns_planted_sequence(name):
    log = planted_log(n_users=20, length=15) if name == "jodie" else None
    mrr, pop = check_learns(lambda: create(name, **LEARN[name]), log=log, margin=2.0)
    assert mrr > 0.3


@pytest.mark.parametrize("name,default_order", [("jodie", "temporal"),
                                                ("latentcross", "temporal"),
                                                ("lstm", "shuffled"), ("gru4rec", "shuffled"),
                                                ("sasrec", "shuffled"), ("tisasrec", "shuffled"),
                                                ("bert4rec", "shuffled")])
def test_oh2022_defaults(name, default_order):
    cfg = create(name).config
    assert cfg.batch_order == default_order
    assert (cfg.epochs, cfg.lr, cfg.embedding_dim, cfg.max_len) == (50, 0.001, 128, 50)


def test_jodie_rejects_shuffled_and_tbatches_are_valid():
    from recaudit.models.sequential._jodie._plan import t_batches

    with pytest.raises(ConfigError, match="temporal"):
        create("jodie", batch_order="shuffled")
    train, _ = leave_last_out(planted_log())
    tb = t_batches(train)
    assert (np.diff(tb) >= -10**9).all() and tb.min() == 0
    for b in np.unique(tb):  # no user or item twice in a t-batch
        rows = tb == b
        assert len(np.unique(train.user[rows])) == rows.sum()
        assert len(np.unique(train.item[rows])) == rows.sum()
    # a user's interactions are in strictly increasing t-batches
    for u in range(train.n_users):
        assert (np.diff(tb[train.user == u]) > 0).all()


def test_tisasrec_interval_buckets_closed_form():
    from recaudit.models.sequential._attention._tisasrec import interval_buckets

    times = torch.tensor([[0.0, 10.0, 30.0, 100.0, 0.0]], dtype=torch.float64)
    r = interval_buckets(times, torch.tensor([4]), k=5)
    # r_min = 10 (smallest positive consecutive gap); |t_i - t_j| / 10 clipped at 5
    expect = np.minimum(np.abs(np.subtract.outer([0, 1, 3, 10], [0, 1, 3, 10])), 5)
    assert np.array_equal(r[0, :4, :4].numpy(), expect)


def test_latentcross_buckets():
    from recaudit.models.sequential._latentcross._model import log_buckets

    b = log_buckets(torch.tensor([0.0, 1.0, 2.0, 3.0, 1e12, -5.0]), 8)
    assert b.tolist() == [0, 1, 1, 2, 7, 0]


def test_bert4rec_appends_mask_after_recent_items():
    from recaudit.models.sequential._attention._bert4rec import _append_mask

    items = torch.tensor([[1, 2, 3, 4], [5, 0, 0, 0], [0, 0, 0, 0]])
    out, keep = _append_mask(items, torch.tensor([4, 1, 1]), mask_token=9, max_len=4)
    assert out.tolist() == [[2, 3, 4, 9], [5, 9, 0, 0], [9, 0, 0, 0]]
    assert keep.tolist() == [3, 1, 0]


def test_temporal_batches_follow_target_time():
    from recaudit.models.sequential._samples import SequenceData

    train, _ = leave_last_out(planted_log(n_users=6, length=8))
    data = SequenceData(train, max_len=5, layout="prefix")
    order = data.order("temporal", np.random.default_rng(0))
    target_rows = data.rows[data.last_target[order]]
    assert (np.diff(train.timestamp[target_rows]) >= 0).all()


@pytest.mark.parametrize("name", ["gru4rec", "lstm", "sasrec", "tisasrec", "bert4rec", "jodie",
                                  "latentcross"])
def test_config_round_trip(name):
    model = create(name, epochs=3, lr=0.01)
    again = create(name, **model.get_params())
    assert again.config == model.config
    assert model.get_params()["epochs"] == 3


def test_different_seed_different_init_same_seed_same_init_across_models():
    from recaudit.models import GRU4Rec, LSTM

    train, _ = leave_last_out(planted_log(n_users=5, length=5))
    a = GRU4Rec(epochs=1, embedding_dim=8, hidden_dim=8).fit(train, seed=0)
    b = GRU4Rec(epochs=1, embedding_dim=8, hidden_dim=8).fit(train, seed=1)
    assert not torch.equal(a.network_.embedding.weight, b.network_.embedding.weight)
    c = LSTM(epochs=1, embedding_dim=8, hidden_dim=8).fit(train, seed=0)
    # streams are keyed by model name: two models never share the same random draws
    assert not torch.equal(a.network_.embedding.weight, c.network_.embedding.weight)
