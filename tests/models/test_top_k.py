"""``top_k_from_scores``: the rank lists of a score matrix, by selection instead of a full
sort, equal to sorting every row by ``(-score, item)``."""

import numpy as np
import pytest

from recaudit.models._protocol import top_k_from_scores


def reference(scores, k):
    """Sort each row by (-score, item); keep the fewest finite scores of any row, at most k."""
    n, m = scores.shape
    keys = [sorted(range(m), key=lambda j: (-row[j] if np.isfinite(row[j]) else np.inf, j))
            for row in scores]
    depth = min(int(np.isfinite(row).sum()) for row in scores) if n else 0
    depth = depth if k is None else min(depth, k)
    return np.array([r[:depth] for r in keys], dtype=np.int64).reshape(n, depth)


@pytest.mark.parametrize("seed", range(40))
def test_equals_sorting_every_row_with_ties_inf_nan_and_signed_zeros(seed):
    rng = np.random.default_rng(seed)
    n, m = int(rng.integers(1, 12)), int(rng.integers(1, 200))
    scores = rng.integers(-3, 4, (n, m)).astype(np.float32)     # many ties
    scores[rng.random((n, m)) < 0.1] = -np.inf
    scores[rng.random((n, m)) < 0.05] = np.nan
    scores[rng.random((n, m)) < 0.2] = -0.0
    for k in (1, 2, 3, 7, 24, m, None):
        got = top_k_from_scores(scores, k)
        want = reference(scores, k)
        assert got.items.shape == want.shape
        np.testing.assert_array_equal(got.items, want)
        np.testing.assert_array_equal(got.scores, np.take_along_axis(scores, want, axis=1))


def test_selection_and_sort_agree_on_a_large_catalogue_in_several_blocks():
    """700 rows of 30,000 items span two blocks (~16M scores each); float64 scores are
    selected at their own precision (ties of the rounded values)."""
    rng = np.random.default_rng(7)
    scores = np.round(rng.standard_normal((700, 30_000)), 2)        # float64, ties
    got = top_k_from_scores(scores, 10)
    full = np.lexsort((np.broadcast_to(np.arange(30_000), scores.shape), -scores), axis=-1)
    np.testing.assert_array_equal(got.items, full[:, :10])
    assert got.items.dtype == np.int32
    np.testing.assert_array_equal(got.scores, np.take_along_axis(scores, full[:, :10], 1)
                                  .astype(got.scores.dtype))


def test_a_constant_row_gives_the_lowest_codes_and_seen_items_are_skipped():
    scores = np.zeros((2, 50), dtype=np.float32)
    scores[1, :5] = -np.inf                                        # seen
    np.testing.assert_array_equal(top_k_from_scores(scores, 3).items,
                                  [[0, 1, 2], [5, 6, 7]])
    assert top_k_from_scores(scores, None).items.shape == (2, 45)   # fewest finite: 45
    assert top_k_from_scores(np.zeros((0, 4)), 3).items.shape == (0, 0)


@pytest.mark.parametrize("bad", [0, -1, 2.5, True])
def test_bad_k_and_shape_are_refused(bad):
    with pytest.raises(ValueError, match="k must be"):
        top_k_from_scores(np.zeros((1, 3)), bad)
    with pytest.raises(ValueError, match="matrix"):
        top_k_from_scores(np.zeros(3), 2)


@pytest.mark.parametrize("seed", range(10))
def test_the_cf_models_partial_top_k_pads_unscorable_items(seed):
    """``recommend``'s top-k (collaborative filtering): NaN is unscorable, a row with fewer
    than k scorable items ends in -1 / NaN, ties by the lower item code."""
    from recaudit.models._cf._base import _top_k_nan

    rng = np.random.default_rng(seed)
    scores = rng.integers(0, 3, (6, 90)).astype(np.float32)
    scores[rng.random(scores.shape) < 0.5] = np.nan
    scores[0, 3:] = np.nan                                   # 3 scorable items only
    for k in (1, 5, 30, 90):
        items, vals = _top_k_nan(scores, k)
        for row, got, got_v in zip(scores, items, vals):
            ok = sorted((j for j in range(90) if not np.isnan(row[j])),
                        key=lambda j: (-row[j], j))[:k]
            want = ok + [-1] * (k - len(ok))
            assert got.tolist() == want
            np.testing.assert_array_equal(got_v[:len(ok)], row[ok])
            assert np.isnan(got_v[len(ok):]).all()
