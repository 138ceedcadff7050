"""Influence models (Shriver 2018 Table 4.1, eq. 4.9) against hand-computed values."""

from __future__ import annotations

import numpy as np
import pytest

from recaudit.fuzz import (
    Recommendations,
    attribute_influence,
    item_attribute_influence,
    item_influence,
    modified_attribute_influence,
    rating_influence,
    user_influence,
)


def test_user_influence_by_hand(small_log, small_recs):
    # u0 rated {0,1}: u1's list has 0, u2's has 1 -> 2
    # u1 rated {1,2}: u0 has 2, u2 has 1 (u1's own list has 2: not counted) -> 2
    # u2 rated {0,3}: u1 has 0 (its own list has 3: not counted) -> 1
    # u3 rated {4}: u0 has 4 -> 1
    np.testing.assert_array_equal(user_influence(small_log, small_recs), [2, 2, 1, 1])


def test_item_influence_by_hand(small_log, small_recs):
    # raters with at least one recommendation (u3 has none): i0 u0,u2; i1 u0,u1; i2 u1; i3 u2
    np.testing.assert_array_equal(item_influence(small_log, small_recs), [2, 2, 1, 1, 0])


def test_rating_influence_by_hand(small_log, small_recs):
    # item means: i0 3.0, i1 3.5, i2 2.0, i3 5.0, i4 3.0; all items are recommended
    values, inf = rating_influence(small_log, small_recs, epsilon=0.05)
    np.testing.assert_array_equal(values, [1, 2, 3, 4, 5])
    np.testing.assert_array_equal(inf, [0, 1, 2, 0, 1])
    # the window is inclusive: |4 - 3.5| = 0.5 counts with epsilon 0.5
    _, inf = rating_influence(small_log, small_recs, epsilon=0.5)
    np.testing.assert_array_equal(inf, [0, 1, 3, 1, 1])
    # only recommended items count (distinct): u1 -> [0, 2] alone
    only = Recommendations([1], [[0, 2]])
    _, inf = rating_influence(small_log, only, epsilon=0.05)
    np.testing.assert_array_equal(inf, [0, 1, 1, 0, 0])


def test_attribute_influence_and_eq_4_9_by_hand(small_log, small_recs):
    # recommendation slots: i0 1, i1 1, i2 2, i3 1, i4 1
    names, inf = attribute_influence(small_log, small_recs)
    assert names == ["A", "B", "C", "D"]
    np.testing.assert_array_equal(inf, [2, 2, 3, 1])  # A: i0+i1, B: i0+i3, C: i2+i3, D: i4
    # eq. 4.9 with #A = 4: A -> 2*3-4, B -> 2*3-4, C -> 2*4-4, D -> 2*1-4
    np.testing.assert_array_equal(modified_attribute_influence(inf), [2, 2, 4, -2])
    # item sums: i0 A+B, i1 A, i2 C, i3 B+C, i4 D
    np.testing.assert_array_equal(item_attribute_influence(small_log, small_recs),
                                  [4, 2, 4, 6, -2])


def test_modified_attribute_influence_properties():
    rng = np.random.default_rng(3)
    inf = rng.integers(0, 5, size=12)
    out = modified_attribute_influence(inf)
    brute = [2 * sum(inf[a] >= inf[b] for b in range(12)) - 12 for a in range(12)]
    np.testing.assert_array_equal(out, brute)
    assert out[np.argmax(inf)] == 12  # the most influential attribute scores #A


def test_user_influence_matches_brute_force(fz):
    log = fz.random_log(5)
    rng = np.random.default_rng(1)
    rated = [set(log.item[log.user == u].tolist()) for u in range(log.n_users)]
    users = rng.choice(log.n_users, 25, replace=False)  # some users have no list
    # lists may hold the user's own items and -1 padding
    items = np.where(rng.random((25, 6)) < 0.2, -1,
                     np.stack([rng.choice(log.n_items, 6, replace=False) for _ in users]))
    for recs in (fz.popularity_recs(log, k=4), Recommendations(users, items)):
        lists = {int(v): set(row.tolist()) - {-1} for v, row in zip(recs.users, recs.items,
                                                                    strict=True)}
        brute = [sum(1 for v, lst in lists.items() if v != u and rated[u] & lst)
                 for u in range(log.n_users)]
        np.testing.assert_array_equal(user_influence(log, recs), brute)


def test_missing_attributes_and_bad_recommendations(small_log, small_recs):
    plain = small_log.replace(item_attributes=None)
    with pytest.raises(ValueError, match="item attributes"):
        attribute_influence(plain, small_recs)
    with pytest.raises(ValueError, match="outside"):
        user_influence(small_log, Recommendations([0], [[7, 1]]))
    for fn in (item_influence, rating_influence, attribute_influence):
        with pytest.raises(ValueError, match="outside"):
            fn(small_log, Recommendations([5], [[0, 1]]))
    with pytest.raises(ValueError, match="once"):
        Recommendations([0, 0], [[1], [2]])


def test_recommendations_from_rank_lists(small_log):
    from recaudit.data import RankLists

    lists = RankLists(np.array([[2, 4, 3], [0, 2, 4]], dtype=np.int32))
    recs = Recommendations.of([0, 1], lists, k=2)
    np.testing.assert_array_equal(recs.items, [[2, 4], [0, 2]])
    # u0 rated {0,1}: u1 holds 0; u1 rated {1,2}: u0 holds 2 (its own 2 does not count);
    # u2 rated {0,3}: u1 holds 0; u3 rated {4}: u0 holds 4
    np.testing.assert_array_equal(user_influence(small_log, recs), [1, 1, 1, 1])
