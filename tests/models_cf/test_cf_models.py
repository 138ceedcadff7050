"""Rating-based recommenders: hand-computed predictions, independent brute-force references,
seen-item exclusion, the partial ``recommend`` and the protocol's ``rank``, determinism."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from recaudit.data import Interactions
from recaudit.errors import ConfigError, DataError
from recaudit.models import create

NAN = np.nan


def log_from_matrix(m: np.ndarray, attrs=None) -> Interactions:
    """Ratings log from a dense users x items matrix (NaN = not rated)."""
    u, i = np.nonzero(~np.isnan(m))
    return Interactions.from_codes(u, i, rating=m[u, i], n_users=m.shape[0], n_items=m.shape[1],
                                   item_attributes=attrs)


# ------------------------------------------------------------------ Slope One (by hand)
SLOPE = np.array([[5.0, 3.0, 2.0],
                  [3.0, 4.0, NAN],
                  [NAN, 2.0, 5.0]])


def test_slope_one_unweighted_by_hand():
    # dev(2,0) = (2-5)/1 = -3 ; dev(2,1) = ((2-3) + (5-2))/2 = 1
    # dev(0,1) = ((5-3) + (3-4))/2 = 0.5 ; dev(0,2) = (5-2)/1 = 3
    m = create("slope-one").fit(log_from_matrix(SLOPE), seed=0)
    got = m.predict([1, 2, 0], [2, 0, 0])
    # u1,i2: ((-3+3) + (1+4)) / 2 ; u2,i0: ((0.5+2) + (3+5)) / 2 ; u0,i0 (rated): (3.5 + 5)/2
    np.testing.assert_allclose(got, [2.5, 5.25, 4.25])


def test_slope_one_weighted_by_hand():
    m = create("slope-one", weighted=True).fit(log_from_matrix(SLOPE), seed=0)
    got = m.predict([1, 2, 0], [2, 0, 0])
    # weights are the co-rating counts c_ji
    np.testing.assert_allclose(got, [(0 * 1 + 5 * 2) / 3, (2.5 * 2 + 8 * 1) / 3,
                                     (3.5 * 2 + 5 * 1) / 3])


def _slope_reference(m: np.ndarray, weighted: bool) -> np.ndarray:
    n_u, n_i = m.shape
    out = np.full(m.shape, np.nan)
    for u in range(n_u):
        for j in range(n_i):
            num = den = 0.0
            for i in range(n_i):
                if i == j or np.isnan(m[u, i]):
                    continue
                both = ~np.isnan(m[:, i]) & ~np.isnan(m[:, j])
                c = both.sum()
                if c == 0:
                    continue
                dev = (m[both, j] - m[both, i]).mean()
                w = c if weighted else 1
                num += w * (dev + m[u, i])
                den += w
            if den > 0:
                out[u, j] = num / den
    return out


def random_ratings(seed: int, n_users=9, n_items=11, density=0.5) -> np.ndarray:
    rng = np.random.default_rng(seed)
    m = rng.integers(1, 11, size=(n_users, n_items)) / 2.0
    m[rng.random(m.shape) > density] = np.nan
    return m


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_slope_one_matches_brute_force(weighted, seed):
    m = random_ratings(seed)
    model = create("slope-one", weighted=weighted).fit(log_from_matrix(m), seed=0)
    uu, ii = np.meshgrid(np.arange(m.shape[0]), np.arange(m.shape[1]), indexing="ij")
    got = model.predict(uu.ravel(), ii.ravel()).reshape(m.shape)
    np.testing.assert_allclose(got, _slope_reference(m, weighted), equal_nan=True)


# ------------------------------------------------------------------ kNN
def test_user_user_by_hand_and_zero_variance_user():
    m = np.array([[4.0, 2.0, NAN],      # mean 3, centred (1, -1)
                  [5.0, 1.0, 4.0],      # mean 10/3, centred (5/3, -7/3, 2/3): cos > 0
                  [1.0, 5.0, 2.0],      # mean 8/3: cos with u0 < 0, never a neighbour
                  [3.0, 3.0, NAN]])     # zero variance: no neighbours at all
    model = create("user-user").fit(log_from_matrix(m), seed=0)
    # only u1 is a positive neighbour of u0 for item 2: 3 + (2/3)
    np.testing.assert_allclose(model.predict([0], [2]), [3 + 2 / 3])
    items, scores = model.recommend([0, 3], k=2)
    assert items[0].tolist() == [2, -1]                 # one scorable unseen item
    assert items[1].tolist() == [-1, -1]                # Shriver 2018's NRANKS(min)=0 anomaly
    assert np.isnan(scores[1]).all()



@pytest.mark.parametrize("tied", [((5.0, 1.0, 5.0), (5.0, 1.0, 1.0)),
                                  ((5.0, 1.0, 1.0), (5.0, 1.0, 5.0))])
def test_user_user_keeps_the_lower_user_of_a_boundary_tie(tied):
    # u1 and u2 have exactly the same similarity to u0 (centred (4/3, -8/3, 4/3) and
    # (8/3, -4/3, -4/3): same dot product with u0's (2, -2), same norm) but opposite centred
    # ratings of item 2; u3 is more similar than both. With two neighbours, u3 and the lower
    # of the tied users are kept, whichever of them comes first (a heap fed in user order
    # kept u2 here: u3 replaced its root, u1)
    m = np.array([[5.0, 1.0, NAN], *tied, [5.0, 1.0, 4.0]])
    model = create("user-user", max_nbrs=2).fit(log_from_matrix(m), seed=0)
    sims = (model.unit_ @ model.unit_.T).toarray()
    assert sims[0, 1] == sims[0, 2] < sims[0, 3]        # the premise: an exact tie
    c = {v: m[v, 2] - np.nanmean(m[v]) for v in (1, 3)}
    s1, s3 = sims[0, 1], sims[0, 3]
    expected = 3 + (s1 * c[1] + s3 * c[3]) / (s1 + s3)
    np.testing.assert_allclose(model.predict([0], [2]), [expected], rtol=1e-12)

def _user_knn_reference(m, max_nbrs, min_sim=1e-6, negative=False):
    mean = np.nanmean(m, axis=1)
    c = np.nan_to_num(m - mean[:, None])
    norm = np.linalg.norm(c, axis=1)
    unit = np.divide(c, norm[:, None], out=np.zeros_like(c), where=norm[:, None] > 0)
    sim = unit @ unit.T
    out = np.full(m.shape, np.nan)
    for u in range(m.shape[0]):
        for i in range(m.shape[1]):
            nb = [v for v in range(m.shape[0]) if v != u and not np.isnan(m[v, i])
                  and (abs(sim[u, v]) if negative else sim[u, v]) >= min_sim]
            nb = sorted(nb, key=lambda v: -sim[u, v])[:max_nbrs]
            if nb:
                s = sim[u, nb]
                out[u, i] = mean[u] + (s * c[nb, i]).sum() / np.abs(s).sum()
    return out


def _item_knn_reference(m, max_nbrs, min_sim=1e-6, negative=False):
    mean = np.nanmean(m, axis=0)
    c = np.nan_to_num(m - mean[None, :])
    norm = np.linalg.norm(c, axis=0)
    unit = np.divide(c, norm[None, :], out=np.zeros_like(c), where=norm[None, :] > 0)
    sim = unit.T @ unit
    out = np.full(m.shape, np.nan)
    for u in range(m.shape[0]):
        for i in range(m.shape[1]):
            nb = [j for j in range(m.shape[1]) if j != i and not np.isnan(m[u, j])
                  and (abs(sim[i, j]) if negative else sim[i, j]) >= min_sim]
            nb = sorted(nb, key=lambda j: -sim[i, j])[:max_nbrs]
            if nb:
                s = sim[i, nb]
                out[u, i] = mean[i] + (s * c[u, nb]).sum() / np.abs(s).sum()
    return out


@pytest.mark.parametrize("negative", [False, True])
@pytest.mark.parametrize("max_nbrs", [2, 20])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_knn_match_brute_force(max_nbrs, seed, negative):
    m = random_ratings(seed, n_users=10, n_items=12, density=0.6)
    uu, ii = np.meshgrid(np.arange(m.shape[0]), np.arange(m.shape[1]), indexing="ij")
    for name, ref in (("user-user", _user_knn_reference), ("item-item", _item_knn_reference)):
        model = create(name, max_nbrs=max_nbrs, negative=negative).fit(log_from_matrix(m),
                                                                       seed=0)
        got = model.predict(uu.ravel(), ii.ravel()).reshape(m.shape)
        np.testing.assert_allclose(got, ref(m, max_nbrs, negative=negative), equal_nan=True,
                                   err_msg=name)


@pytest.mark.parametrize("negative", [False, True])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_item_item_strategies_agree_to_the_bit_and_keep_the_lower_item_of_a_tie(seed,
                                                                                negative):
    # every item has a twin with the same ratings, so every similarity ties with the twin's
    # and the neighbourhood boundary falls between twins again and again
    from recaudit.models._cf._knn import _item_item_scores

    m = np.repeat(random_ratings(seed, n_users=12, n_items=8, density=0.7), 2, axis=1)
    model = create("item-item", max_nbrs=3, negative=negative).fit(log_from_matrix(m), seed=0)
    c, s, r = model.config, model.sim_, model.centred_
    users = np.arange(m.shape[0], dtype=np.int64)

    def scores(strategy: int) -> np.ndarray:
        return _item_item_scores(users, r.indptr.astype(np.int64), r.indices.astype(np.int64),
                                 r.data, s.indptr.astype(np.int64), s.indices.astype(np.int64),
                                 s.data, model.item_mean_, model.n_items_, c.max_nbrs,
                                 c.min_nbrs, strategy)

    push, scan = scores(1), scores(2)
    assert np.array_equal(push, scan, equal_nan=True)      # to the bit, not merely close
    assert np.array_equal(scores(0), scan, equal_nan=True)
    uu, ii = np.meshgrid(users, np.arange(m.shape[1]), indexing="ij")
    got = model.predict(uu.ravel(), ii.ravel()).reshape(m.shape)
    np.testing.assert_allclose(got, _item_knn_reference(m, 3, negative=negative),
                               equal_nan=True, rtol=1e-12)


@pytest.mark.parametrize("strategy", [1, 2])
def test_item_item_evicts_the_higher_item_of_a_tie_by_hand(strategy):
    # target item 0; the user rated items 1 and 2 (both similarity 0.5 to item 0, centred
    # ratings +1 and -1) and item 3 (0.9, +0.5); two neighbours: items 3 and 1. Pushed in
    # item order, 1 and 2 fill the buffer and 3 evicts one of them: a heap ranking by
    # similarity alone evicted item 1 (its root), giving (0.45 - 0.5) / 1.4
    from recaudit.models._cf._knn import _item_item_scores

    sims = {(0, 1): 0.5, (0, 2): 0.5, (0, 3): 0.9}
    rows = [sorted(((s, j) for (a, j), s in sims.items() if a == i), key=lambda t: (-t[0], t[1]))
            if i == 0 else [(sims[(0, i)], 0)] for i in range(4)]
    s_indptr = np.cumsum([0] + [len(r) for r in rows]).astype(np.int64)
    s_nbr = np.array([j for r in rows for _, j in r], dtype=np.int64)
    s_val = np.array([s for r in rows for s, _ in r])
    got = _item_item_scores(np.array([0], dtype=np.int64), np.array([0, 3], dtype=np.int64),
                            np.array([1, 2, 3], dtype=np.int64), np.array([1.0, -1.0, 0.5]),
                            s_indptr, s_nbr, s_val, np.zeros(4), 4, 2, 1, strategy)
    assert got[0, 0] == pytest.approx((0.9 * 0.5 + 0.5 * 1.0) / 1.4, rel=1e-12)


def test_negative_neighbours_by_hand():
    # LensKit Java's AbsoluteThreshold: a negatively correlated user counts, and a rating
    # below their mean pushes the score up
    m = np.array([[4.0, 2.0, NAN],      # mean 3, centred (1, -1)
                  [1.0, 5.0, 1.0]])     # mean 7/3, centred (-4/3, 8/3, -4/3): cos(u0, u1) < 0
    c0, c1 = np.array([1.0, -1.0]), np.array([-4 / 3, 8 / 3])
    s = c0 @ c1 / (np.linalg.norm(c0) * np.linalg.norm(c1))
    assert s < 0
    log = log_from_matrix(m)
    assert np.isnan(create("user-user").fit(log, seed=0).predict([0], [2])).all()
    got = create("user-user", negative=True).fit(log, seed=0).predict([0], [2])
    np.testing.assert_allclose(got, [3 + s * (-4 / 3) / abs(s)])      # 3 + 4/3
    with pytest.raises(ConfigError, match="key 'negative': expected true or false"):
        create("user-user", negative="yes")


def test_item_item_by_hand():
    m = np.array([[5.0, 4.0, NAN],
                  [1.0, 2.0, 3.0],
                  [3.0, NAN, 3.0]])
    # item means 3, 3, 3 -> centred columns: i0 (2,-2,0), i1 (1,-1,.), i2 (.,0,0)
    # cos(i0, i1) = 1; i2 is a zero vector, similar to nothing
    model = create("item-item").fit(log_from_matrix(m), seed=0)
    # u2 -> i1: neighbour i0 (rated 3, centred 0): 3 + 0 = 3; u0 -> i2: no neighbour
    np.testing.assert_allclose(model.predict([2, 0], [1, 2]), [3.0, NAN])


# ------------------------------------------------------------------ FunkSVD
def test_funksvd_fits_low_rank_better_than_biases():
    rng = np.random.default_rng(0)
    p, q = rng.normal(size=(40, 3)), rng.normal(size=(30, 3))
    full = np.clip(3 + p @ q.T, 0.5, 5.0)
    mask = rng.random(full.shape) < 0.5
    m = np.where(mask, full, np.nan)
    model = create("funksvd", features=3, iterations=200, lrate=0.01).fit(
        log_from_matrix(m), seed=0)
    uu, ii = np.nonzero(mask)
    pred = model.predict(uu, ii)
    bias = model.mu_ + model.item_bias_[ii] + model.user_bias_[uu]
    rmse, rmse_bias = (np.sqrt(np.mean((x - full[uu, ii]) ** 2)) for x in (pred, bias))
    assert rmse < 0.6 * rmse_bias


def test_funksvd_without_damping_has_finite_biases_for_unrated_items():
    # LensKit Java's default (BiasDamping 0): an item nobody rated used to get 0 / 0 = NaN
    m = random_ratings(5)
    m[:, 3] = np.nan
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        model = create("funksvd", damping=0.0, iterations=3).fit(log_from_matrix(m), seed=0)
    assert np.isfinite(model.item_bias_).all() and model.item_bias_[3] == 0
    np.testing.assert_allclose(model.item_bias_[0], np.nanmean(m[:, 0]) - model.mu_)
    assert np.isnan(model.predict([0], [3])).all()          # still unscorable


def test_funksvd_unknown_user_and_item_are_unscorable():
    m = random_ratings(3)
    m[2, :] = np.nan
    m[:, 4] = np.nan
    model = create("funksvd", iterations=5).fit(log_from_matrix(m), seed=0)
    assert np.isnan(model.predict([2, 0], [0, 4])).all()
    assert np.isfinite(model.predict([0], [0])).all()


# ------------------------------------------------------------------ shared behaviour
MODELS = ["user-user", "item-item", "funksvd", "slope-one"]


@pytest.mark.parametrize("name", MODELS)
def test_seen_items_excluded_by_default_and_optionally_kept(name):
    m = random_ratings(4, n_users=12, n_items=15)
    log = log_from_matrix(m)
    params = {"iterations": 5} if name == "funksvd" else {}
    items, _ = create(name, **params).fit(log, seed=0).recommend(np.arange(12), k=15)
    rated = ~np.isnan(m)
    assert not any(rated[u, i] for u in range(12) for i in items[u] if i >= 0)
    items2, _ = create(name, exclude_seen=False, **params).fit(log, seed=0).recommend(
        np.arange(12), k=15)
    assert any(rated[u, i] for u in range(12) for i in items2[u] if i >= 0)


@pytest.mark.parametrize("name", MODELS)
def test_rank_extends_recommend_with_fallback(name):
    m = random_ratings(5, n_users=12, n_items=15)
    log = log_from_matrix(m)
    model = create(name, **({"iterations": 5} if name == "funksvd" else {})).fit(log, seed=0)
    items, _ = model.recommend(np.arange(12), k=15)
    lists = model.rank(log)   # users 0..11 all have ratings
    seen = (~np.isnan(m)).sum(axis=1)
    assert lists.depth == 15 - seen.max()
    assert np.all(np.diff(lists.scores, axis=1) <= 0)
    for u in range(12):
        scored = items[u][items[u] >= 0][:lists.depth]
        assert lists.items[u, :len(scored)].tolist() == scored.tolist()
        assert not np.isin(lists.items[u], np.flatnonzero(~np.isnan(m[u]))).any()


def test_funksvd_deterministic_and_seed_dependent():
    log = log_from_matrix(random_ratings(6, n_users=20, n_items=25))
    a = create("funksvd", iterations=10).fit(log, seed=7)
    b = create("funksvd", iterations=10).fit(log, seed=7)
    c = create("funksvd", iterations=10).fit(log, seed=8)
    assert a.user_factors_.tobytes() == b.user_factors_.tobytes()
    assert a.rank(log).equals(b.rank(log))
    assert a.user_factors_.tobytes() != c.user_factors_.tobytes()


def test_tie_break_and_topk_padding():
    # item-item on an identical-rating setup: ties broken by lower item code
    from recaudit.models._cf._base import _top_k_nan

    s = np.array([[1.0, 3.0, 3.0, NAN, 2.0], [NAN, NAN, 1.0, NAN, NAN]])
    items, scores = _top_k_nan(s, 3)
    assert items.tolist() == [[1, 2, 4], [2, -1, -1]]
    assert np.isnan(scores[1, 1:]).all()


def test_errors():
    log = Interactions.from_codes([0, 1], [0, 1])
    with pytest.raises(DataError, match="ratings"):
        create("user-user").fit(log, seed=0)
    with pytest.raises(ConfigError, match="max_nbrs"):
        create("item-item", max_nbrs=0).fit(log_from_matrix(SLOPE), seed=0)
    model = create("slope-one").fit(log_from_matrix(SLOPE), seed=0)
    with pytest.raises(ValueError, match="user codes"):
        model.recommend([5], k=2)
    with pytest.raises(ValueError, match="k must be"):
        model.recommend([0], k=0)
    with pytest.raises(RuntimeError, match="not fitted"):
        create("funksvd").predict([0], [0])


def test_candidates_restrict_recommendations():
    m = random_ratings(7, n_users=10, n_items=12)
    model = create("slope-one").fit(log_from_matrix(m), seed=0)
    allowed = np.zeros(12, bool)
    allowed[[1, 3, 5]] = True
    items, _ = model.recommend(np.arange(10), k=5, candidates=allowed)
    assert np.isin(items[items >= 0], [1, 3, 5]).all()
    with pytest.raises(ValueError, match="boolean mask"):
        model.recommend([0], k=2, candidates=np.ones(3, bool))


@pytest.mark.parametrize("name", MODELS + ["lightfm"])
def test_config_round_trips_and_unknown_keys_fail(name):
    import dataclasses

    model = create(name)
    again = create(name, **dataclasses.asdict(model.config))
    assert again.config == model.config and type(again) is type(model)
    with pytest.raises(ConfigError, match="no parameter"):
        create(name, n_neighbours=3)


def test_similarity_rows_are_ordered_as_a_lexsort_would():
    # values with many ties (a few distinct ones), some rows empty
    import scipy.sparse as sp

    from recaudit.models._cf._knn import _by_similarity

    rng = np.random.default_rng(3)
    dense = rng.integers(-3, 4, size=(40, 30)) / 4.0 * (rng.random((40, 30)) < 0.4)
    dense[[5, 17]] = 0.0
    m = sp.csr_array(dense)
    m.sort_indices()
    rows = np.repeat(np.arange(m.shape[0]), np.diff(m.indptr))
    expected = np.lexsort((m.indices, -m.data, rows))
    assert np.array_equal(_by_similarity(m.indptr.astype(np.int64), m.data), expected)


@pytest.mark.parametrize("depth", [1, 5, 30])
@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_rank_lists_are_ordered_as_the_four_key_lexsort(seed, depth):
    # scores with ties (few distinct values, -0.0 beside 0.0) and NaN (unscored), some seen,
    # baselines with ties: the order the rank lists were defined by (scored by score, then
    # unscored unseen, then unscored seen, by baseline; ties by item code)
    from recaudit.models._cf._base import _list_order

    rng = np.random.default_rng(seed)
    s = rng.integers(-2, 3, size=(25, 30)) / 2.0
    s[s == 0] = rng.choice([0.0, -0.0], size=int((s == 0).sum()))
    s[rng.random(s.shape) < 0.5] = np.nan
    s[3] = np.nan                                          # a row without any score
    seen = np.isnan(s) & (rng.random(s.shape) < 0.3)
    baseline = rng.integers(0, 4, size=30) / 3.0
    scored = ~np.isnan(s)
    expected = np.lexsort((np.broadcast_to(np.arange(30), s.shape),
                           np.where(scored, 0.0, -baseline),
                           np.where(scored, -s, 0.0),
                           np.where(scored, 0, np.where(seen, 2, 1))), axis=-1)[:, :depth]
    got = _list_order(s, seen, np.argsort(-baseline, kind="stable"), depth)
    assert np.array_equal(got, expected)


def test_the_kth_smallest_score_is_the_partitions():
    # the threshold _list_order cuts at: every k of arrays of distinct values, of few values
    # (ties, -0.0 beside 0.0) and of one value, as numpy's partition gives it
    from recaudit.models._cf._base import _kth_smallest

    rng = np.random.default_rng(5)
    for n in (1, 2, 3, 7, 40, 101):
        for a in (rng.random(n), rng.integers(-2, 3, n) / 2.0 * rng.choice([1.0, -1.0], n),
                  np.full(n, 0.25)):
            before = a.copy()
            for k in range(n):
                assert _kth_smallest(a, k) == np.partition(a, k)[k], (a, k)
            assert np.array_equal(a, before)  # the input is left as it was
