"""LensKit and implicit adapters: the conformance kit, like every model. They skip only when
their optional extra is absent (``dev`` installs both, so they run in CI)."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

from recaudit.errors import ConfigError
from recaudit.models import create
from recaudit.models.testing import RecommenderConformance, planted_log

HAS_LENSKIT = importlib.util.find_spec("lenskit") is not None
HAS_IMPLICIT = importlib.util.find_spec("implicit") is not None
needs_lenskit = pytest.mark.skipif(not HAS_LENSKIT, reason="extra 'lenskit' not installed")
needs_implicit = pytest.mark.skipif(not HAS_IMPLICIT, reason="extra 'implicit' not installed")


def rated_log():
    log = planted_log(n_items=60)
    rng = np.random.default_rng(0)
    return log.replace(rating=rng.integers(1, 11, size=len(log)) / 2.0)


class _Rated(RecommenderConformance):
    def make_log(self):
        return rated_log()


@needs_lenskit
class TestLensKitItemKNN(_Rated):
    check_changes = False  # closed form: the seed is not used

    def make_model(self):
        return create("lenskit-item-knn")


@needs_lenskit
class TestLensKitUserKNN(_Rated):
    check_changes = False

    def make_model(self):
        return create("lenskit-user-knn")


@needs_lenskit
class TestLensKitBiasedMF(_Rated):
    def make_model(self):
        return create("lenskit-biased-mf", embedding_size=8, epochs=3)


@needs_lenskit
class TestLensKitImplicitMF(RecommenderConformance):
    def make_model(self):
        return create("lenskit-implicit-mf", embedding_size=8, epochs=3)


@needs_implicit
class TestImplicitALS(RecommenderConformance):
    def make_model(self):
        return create("implicit-als", factors=8, iterations=3)


@needs_implicit
class TestImplicitBPR(RecommenderConformance):
    def make_model(self):
        return create("implicit-bpr", factors=8, iterations=20)


@needs_implicit
class TestImplicitItemKNN(RecommenderConformance):
    check_changes = False

    def make_model(self):
        return create("implicit-item-knn", K=10)


@pytest.mark.parametrize("name", ["lenskit-item-knn", "lenskit-user-knn", "implicit-item-knn"])
def test_deletion_changes_lists_of_deterministic_adapters(name):
    pytest.importorskip(name.split("-")[0])
    from recaudit.models.testing import check_deletion_changes, leave_last_out

    check_deletion_changes(lambda: create(name), *leave_last_out(rated_log()))


@needs_implicit
def test_implicit_item_knn_scores_are_count_weighted_cosine_sums():
    """s(u, i) = sum_j C_uj sim(j, i) with sim the top-K cosine of the count columns."""
    from recaudit.models.testing import leave_last_out

    train, queries = leave_last_out(planted_log(n_users=15, n_items=12, length=10))
    m = create("implicit-item-knn", K=100, exclude_seen=False).fit(train, seed=0)
    C = np.zeros((train.n_users, train.n_items))
    np.add.at(C, (train.user, train.item), 1.0)
    norms = np.linalg.norm(C, axis=0)
    sim = (C.T @ C) / np.outer(norms, norms)  # K >= n_items: every neighbour kept
    expect = C @ sim
    got = m._score_users(np.arange(train.n_users))
    scored = ~np.isnan(got)
    assert scored.mean() > 0.9
    assert np.allclose(got[scored], expect[scored], rtol=1e-5)


@needs_lenskit
def test_lenskit_biased_mf_predicts_ratings_on_the_rating_scale():
    from recaudit.models.testing import leave_last_out

    train, _ = leave_last_out(rated_log())
    m = create("lenskit-biased-mf", embedding_size=4, epochs=5).fit(train, seed=0)
    s = m._score_users(np.arange(train.n_users))
    assert np.nanmean(s) == pytest.approx(float(train.rating.mean()), abs=0.5)


def test_bad_parameters_are_config_errors():
    with pytest.raises(ConfigError, match="factors"):
        create("implicit-als", factor=3)
    with pytest.raises(ConfigError, match="has no parameter 'factor'. Did you mean 'factors'"):
        create("implicit-als", factor=3)
    with pytest.raises(ConfigError, match="iterations.*must be an integer >= 1, got 0"):
        create("implicit-bpr", iterations=0)  # at construction, before any training
    with pytest.raises(ConfigError, match="regularization.*must be a number >= 0"):
        create("lenskit-biased-mf", regularization=-0.1)
    with pytest.raises(ConfigError, match="expected an integer, got str"):
        create("lenskit-item-knn", max_nbrs="20")


def test_missing_extra_names_it(monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "implicit", None)  # import implicit -> ImportError
    with pytest.raises(ConfigError, match=r"pip install 'recaudit\[implicit\]'"):
        create("implicit-als").fit(planted_log(n_users=5, length=5), seed=0)


@pytest.mark.parametrize("name", ["lenskit-item-knn", "lenskit-user-knn", "lenskit-biased-mf",
                                  "lenskit-implicit-mf", "implicit-als", "implicit-bpr",
                                  "implicit-item-knn"])
def test_config_round_trips_through_get_params(name):
    m = create(name, exclude_seen=False)
    again = create(name, **m.get_params())
    assert again.config == m.config and again.get_params()["exclude_seen"] is False


@needs_lenskit
def test_lenskit_leaves_the_process_thread_settings_alone():
    """LensKit's one-time parallel setup sets torch's and BLAS's thread counts process-wide;
    the adapter trains and scores on one thread and restores both."""
    import torch
    from threadpoolctl import threadpool_info

    def blas():
        return {i["filepath"]: i["num_threads"] for i in threadpool_info()}

    before_torch, before_blas = torch.get_num_threads(), blas()
    create("lenskit-biased-mf", embedding_size=4, epochs=2).fit(rated_log(), seed=0).rank(
        rated_log(), k=3)
    after = blas()
    assert torch.get_num_threads() == before_torch
    assert {path: after[path] for path in before_blas} == before_blas
