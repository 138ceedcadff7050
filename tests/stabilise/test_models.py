"""Stabilised models: the conformance kit, determinism, what each method promises."""

import numpy as np
import pytest

from recaudit.errors import ConfigError
from recaudit.metrics import jaccard_batch
from recaudit.models import create
from recaudit.models.testing import RecommenderConformance, leave_last_out, planted_log
from recaudit.stabilise import (Anchor, Finest, SeedEnsemble, member_seed, methods, parse,
                                stabilise)

SMALL = dict(epochs=2, embedding_dim=16, batch_size=32)
FT = dict(epochs=2, topk=4)


class TestFinestLSTM(RecommenderConformance):
    def make_model(self):
        return Finest("lstm", {**SMALL, "hidden_dim": 16}, **FT)


class TestFinestSASRec(RecommenderConformance):
    def make_model(self):
        return Finest("sasrec", SMALL, **FT)


class TestFinestBERT4Rec(RecommenderConformance):
    def make_model(self):
        return Finest("bert4rec", {**SMALL, "max_len": 10, "layers": 1}, **FT)


class TestFinestTiSASRec(RecommenderConformance):
    def make_model(self):
        return Finest("tisasrec", {**SMALL, "time_span": 16}, **FT)


class TestFinestGRU4Rec(RecommenderConformance):
    def make_model(self):
        return Finest("gru4rec", {**SMALL, "hidden_dim": 16}, **FT)


class TestFinestLatentCross(RecommenderConformance):
    def make_model(self):
        return Finest("latentcross", {**SMALL, "hidden_dim": 16}, **FT)


class TestEnsembleSASRec(RecommenderConformance):
    def make_model(self):
        return SeedEnsemble("sasrec", SMALL, n=2)


class TestEnsembleJODIE(RecommenderConformance):
    def make_model(self):
        return SeedEnsemble("jodie", {"epochs": 2, "embedding_dim": 16}, n=2)


def _data():
    return leave_last_out(planted_log())


# ------------------------------------------------------------------ FINEST
def test_finest_with_an_anchor_is_bit_identical_run_to_run_and_caches_the_reference(tmp_path):
    train, queries = _data()
    drop = np.ones(len(train), dtype=bool)
    drop[[5, 50, 300]] = False
    perturbed = train.take(drop)

    def fit(log, seed=0):
        m = Finest("lstm", {**SMALL, "hidden_dim": 16}, **FT)
        return m.fit(log, seed=seed, anchor=Anchor(train, 0, tmp_path))

    base = fit(train)
    assert len(list(tmp_path.glob("finest-*.npz"))) == 1  # the reference model's lists
    a, b = fit(perturbed), fit(perturbed)
    assert a.rank(queries).equals(b.rank(queries))
    assert not a.rank(queries).equals(base.rank(queries))
    # the cached reference is the one a fresh reference model gives
    from recaudit.stabilise import reference_lists

    fresh = reference_lists(create("lstm", **SMALL, hidden_dim=16).fit(train, seed=0), train, 4)
    with np.load(next(tmp_path.glob("finest-*.npz"))) as z:
        assert np.array_equal(z["top"], fresh.top) and np.array_equal(z["comp"], fresh.comp)
    # a reseeded perturbed model is anchored to seed 0's lists, not to its own
    c = fit(train, seed=1)
    d = Finest("lstm", {**SMALL, "hidden_dim": 16}, **FT, anchor="self").fit(
        train, seed=1, anchor=Anchor(train, 0, tmp_path))
    assert not c.rank(queries).equals(d.rank(queries))


def test_finest_records_both_stages():
    train, _ = _data()
    m = Finest("lstm", {**SMALL, "hidden_dim": 16}, epochs=3, topk=4).fit(train, seed=0)
    phases = [h["phase"] for h in m.history_]
    assert phases == ["pretrain"] * 2 + ["finest"] * 3
    assert all(0 < h["instances"] <= 1 for h in m.history_[2:])
    assert {"pretrain_seconds", "reference_cpu_seconds", "finetune_seconds"} <= set(m.timing_)


def test_the_rank_preserving_loss_keeps_the_reference_lists():
    """With the regulariser the fine-tuned model's top-k stays closer to the pre-trained
    model's than fine-tuning on the same simulated data without it (weight = 0)."""
    train, queries = _data()
    params = {**SMALL, "hidden_dim": 16, "epochs": 3}
    pre = create("lstm", **params).fit(train, seed=0).rank(queries, k=4).items

    def agreement(weight):
        m = Finest("lstm", params, epochs=6, topk=4, lr=0.01, weight=weight, ratio=0.05)
        lists = m.fit(train, seed=0).rank(queries, k=4).items
        return jaccard_batch(pre, lists, k=4).mean()

    free, kept = agreement(0.0), agreement(10.0)
    assert kept > free + 0.1, (kept, free)


def test_finest_rejects_models_outside_the_shared_loop_and_bad_options():
    with pytest.raises(ConfigError, match="jodie") as exc:
        Finest("jodie", {"epochs": 1})
    assert exc.value.key == "method"
    with pytest.raises(ConfigError, match="ensemble"):
        Finest("user-user")
    with pytest.raises(ConfigError) as exc:
        parse({"method": "finest", "topk": 0})
    assert exc.value.key == "topk"
    with pytest.raises(ConfigError, match="Did you mean 'margin'") as exc:
        parse({"method": "finest", "margn": 0.2})
    with pytest.raises(ConfigError, match="edits"):
        parse({"method": "finest", "edits": ["delete", "shuffle"]})
    with pytest.raises(ConfigError, match="Did you mean 'finest'") as exc:
        parse({"method": "finset"})
    assert exc.value.key == "method"
    assert methods() == ["ensemble", "finest"]


# ------------------------------------------------------------------ ensembles
def test_one_member_ensemble_is_the_plain_model_bit_for_bit():
    train, queries = _data()
    plain = create("sasrec", **SMALL).fit(train, seed=4).rank(queries)
    ens = SeedEnsemble("sasrec", SMALL, n=1).fit(train, seed=4).rank(queries)
    assert ens.equals(plain)


@pytest.mark.parametrize("combine", ["scores", "softmax"])
def test_ensemble_scores_are_the_mean_of_independently_trained_members(combine):
    train, queries = _data()
    ens = stabilise(lambda: create("lstm", **SMALL), {"method": "ensemble", "n": 3,
                                                      "combine": combine}).fit(train, seed=2)
    members = [create("lstm", **SMALL).fit(train, seed=member_seed(2, i)).score(queries)
               .astype(np.float64) for i in range(3)]
    if combine == "softmax":
        members = [np.exp(s) / np.exp(s).sum(1, keepdims=True) for s in members]
        assert np.allclose(ens.score(queries).sum(1), 1.0)
    np.testing.assert_allclose(ens.score(queries), sum(members) / 3, rtol=1e-12, atol=1e-15)
    assert len({member_seed(2, i) for i in range(3)}) == 3 and member_seed(2, 0) == 2


def test_ensemble_honours_exclude_seen():
    train, queries = _data()
    ens = SeedEnsemble("lstm", {**SMALL, "exclude_seen": True}, n=2).fit(train, seed=0)
    lists = ens.rank(queries, k=5).items
    for q in range(len(queries)):
        assert not set(lists[q]) & set(queries.context(q).tolist())


def test_ensemble_needs_scores():
    with pytest.raises(ConfigError, match="score") as exc:
        SeedEnsemble("user-user", n=2)
    assert exc.value.key == "method"
