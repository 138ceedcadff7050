"""Differential oracles (Shriver 2018 §4.1.3) against hand-computed distances and verdicts."""

from __future__ import annotations

import numpy as np
import pytest

from recaudit.fuzz import Oracle, default_delta, distances

BEFORE = np.array([[1, 2, 3], [4, 5, 6], [9, 8, 7]])
AFTER = np.array([[2, 1, 7], [4, 5, 6], [8, 7, 6]])


def test_distances_by_hand():
    # row 0: prefix overlaps 0/1, 2/2, 2/3 -> AO 5/9; row 2: 0/1, 1/2, 2/3 -> AO 7/18
    np.testing.assert_allclose(distances(BEFORE, AFTER, "aod", 3), [4 / 9, 0.0, 11 / 18])
    # |∩| / |∪|: 2/4, 3/3, 2/4 -> distances 0.5, 0, 0.5
    np.testing.assert_allclose(distances(BEFORE, AFTER, "jaccard", 3), [0.5, 0.0, 0.5])
    # top item 1 stays, 4 stays, 9 leaves
    np.testing.assert_array_equal(distances(BEFORE, AFTER, "topout", 3), [0.0, 0.0, 1.0])
    # k cuts both lists: with k = 1 row 0 differs entirely
    np.testing.assert_array_equal(distances(BEFORE, AFTER, "jaccard", 1), [1.0, 0.0, 1.0])
    np.testing.assert_array_equal(distances(BEFORE, AFTER, "topout", 1), [1.0, 0.0, 1.0])


def test_identical_lists_have_zero_distance():
    for metric in ("aod", "jaccard", "topout"):
        assert distances(BEFORE, BEFORE, metric, 3).tolist() == [0.0, 0.0, 0.0]


def test_verdicts_by_hand():
    # avg TopOut = 1/3: the oracle passes when the value is strictly below delta (eq. 4.10)
    assert Oracle("topout", k=3, delta=0.34)(BEFORE, AFTER).stable
    v = Oracle("topout", k=3, delta=1 / 3)(BEFORE, AFTER)
    assert v.value == pytest.approx(1 / 3) and not v.stable
    v = Oracle("aod", k=3, f="max", delta=0.6)(BEFORE, AFTER)
    assert v.value == pytest.approx(11 / 18) and not v.stable
    v = Oracle("jaccard", k=3, f="median", delta=0.6)(BEFORE, AFTER)
    assert v.value == pytest.approx(0.5) and v.stable
    # default delta: 100 * M / |D| -> 100 * 1 / 300 = 1/3
    v = Oracle("topout", k=3)(BEFORE, AFTER, size=1, n_ratings=300)
    assert v.delta == pytest.approx(1 / 3) and not v.stable
    assert Oracle("topout", k=3)(BEFORE, AFTER, size=2, n_ratings=300).stable
    with pytest.raises(ValueError, match="size= and n_ratings="):
        Oracle("topout", k=3)(BEFORE, AFTER)


def test_default_delta_matches_the_thesis():
    # §4.2.1.4: 1, 10, 100 modifications of the 100,000 ratings of MovieLens 100k
    assert [default_delta(m, 100_000) for m in (1, 10, 100)] == pytest.approx([0.001, 0.01, 0.1])
    with pytest.raises(ValueError):
        default_delta(1, 0)


def test_bad_oracle_configuration():
    with pytest.raises(ValueError, match="unknown distance"):
        Oracle("rbo")
    with pytest.raises(ValueError, match="aggregate"):
        Oracle("topout", f="sum")
    with pytest.raises(ValueError, match="same rows"):
        distances(BEFORE, AFTER[:2], "aod", 3)
