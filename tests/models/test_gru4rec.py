"""GRU4Rec: conformance kit, determinism, learning, configuration errors."""

import numpy as np
import pytest
import torch

from recaudit.errors import ConfigError
from recaudit.models import GRU4Rec, create
from recaudit.models.testing import (RecommenderConformance, check_learns, leave_last_out,
                                     planted_log)

SMALL = dict(epochs=2, embedding_dim=16, hidden_dim=16, batch_size=64)


class TestGRU4RecConformance(RecommenderConformance):
    def make_model(self):
        return create("gru4rec", **SMALL)


class TestGRU4RecTemporalPrefix(RecommenderConformance):
    def make_model(self):
        return GRU4Rec(**SMALL, batch_order="temporal", samples="prefix")


def _params(model):
    return {k: v.clone() for k, v in model.network_.state_dict().items()}


def test_bit_identical_parameters_and_global_rng_untouched():
    train, queries = leave_last_out(planted_log())
    state = torch.random.get_rng_state()
    a = GRU4Rec(**SMALL).fit(train, seed=7)
    b = GRU4Rec(**SMALL).fit(train, seed=7)
    assert torch.equal(torch.random.get_rng_state(), state), "global torch RNG was used"
    pa, pb = _params(a), _params(b)
    assert all(torch.equal(pa[k], pb[k]) for k in pa)
    assert a.rank(queries).equals(b.rank(queries))
    assert torch.are_deterministic_algorithms_enabled() is False  # restored after fit


def test_learns_planted_sequence():
    mrr, pop = check_learns(lambda: GRU4Rec(epochs=15, embedding_dim=32, hidden_dim=32,
                                            batch_size=4, lr=0.01), margin=2.0)
    assert mrr > 0.3


def test_exclude_seen_removes_context_items():
    train, queries = leave_last_out(planted_log())
    m = GRU4Rec(**SMALL, exclude_seen=True).fit(train, seed=0)
    top = m.rank(queries, k=5)
    for q in range(len(queries)):
        assert not set(top.items[q]) & set(queries.context(q).tolist())


def test_early_stopping_keeps_best_epoch():
    train, _ = leave_last_out(planted_log())
    m = GRU4Rec(**{**SMALL, "epochs": 30}, lr=0.05, patience=2).fit(train, seed=0)
    mrrs = [h["valid_mrr"] for h in m.history_]
    assert len(mrrs) <= 30
    if len(mrrs) < 30:  # stopped: the last `patience` epochs did not improve on the best
        assert max(mrrs[-2:]) <= max(mrrs[:-2])


@pytest.mark.parametrize("bad", [dict(epochs=0), dict(batch_order="random"), dict(lr=-1.0),
                                 dict(samples="all"), dict(hidden_dim=0), dict(device="tpu")])
def test_bad_config_is_config_error(bad):
    with pytest.raises(ConfigError):
        GRU4Rec(**bad)


def test_unknown_parameter_named():
    with pytest.raises(ConfigError, match="hiden_dim"):
        create("gru4rec", hiden_dim=3)


def test_rank_before_fit_and_wrong_catalogue():
    train, queries = leave_last_out(planted_log())
    with pytest.raises(RuntimeError, match="not fitted"):
        GRU4Rec(**SMALL).rank(queries)
    other = planted_log(n_items=25)
    m = GRU4Rec(**SMALL).fit(train, seed=0)
    with pytest.raises(ValueError, match="catalogue"):
        m.rank(other)
    with pytest.raises(ValueError, match="k must be"):
        m.rank(queries, k=0)


def test_prefix_samples_cover_every_target_once():
    from recaudit.models.sequential._samples import SequenceData

    train, _ = leave_last_out(planted_log(n_users=5, length=12))
    for layout in ("prefix", "window"):
        data = SequenceData(train, max_len=5, layout=layout)
        b = data.batch(np.arange(len(data)), "cpu", with_time=False)
        targets = b.targets[b.targets >= 0].numpy()
        assert len(targets) == len(train) - 5  # every interaction but each user's first
        assert np.array_equal(np.sort(targets), np.sort(data.item[np.setdiff1d(
            np.arange(len(train)), data.indptr[:-1])]))
        assert (b.lengths <= 5).all()


def test_query_batch_left_aligns_most_recent_context():
    from recaudit.data import Queries
    from recaudit.models.sequential._samples import batch_from_queries

    q = Queries(user=[0, 1], context_indptr=[0, 3, 3], context_item=[4, 5, 6],
                context_time=[10.0, 20.0, 35.0], target=[-1, -1], timestamp=[50.0, 7.0],
                n_items=8, n_users=2)
    b = batch_from_queries(q, max_len=2, device="cpu", with_time=True)
    assert b.items.tolist() == [[6, 7], [0, 0]]          # codes + 1, padding 0
    assert b.lengths.tolist() == [2, 1]
    assert b.gaps[0].tolist() == [0.0, 15.0]             # 35 - 20
    assert b.next_gaps[0].tolist() == [15.0, 15.0]       # 50 - 35 at the last position
    assert b.times[0].tolist() == [0.0, 15.0]


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the CPU-only behaviour of 'auto'")
def test_device_auto_is_cpu_without_cuda():
    train, queries = leave_last_out(planted_log(n_users=8, length=6))
    a = GRU4Rec(**SMALL).fit(train, seed=0).rank(queries)
    b = GRU4Rec(**SMALL, device="auto").fit(train, seed=0).rank(queries)
    assert a.equals(b)
    with pytest.raises(ConfigError, match="cuda"):
        GRU4Rec(**SMALL, device="cuda").fit(train, seed=0)
