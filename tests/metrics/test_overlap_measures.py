"""Jaccard, AOD (Shriver eq. 4.11) and TopOut (eq. 4.13)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from recaudit.metrics import (
    aod,
    aod_batch,
    average_overlap,
    jaccard,
    jaccard_batch,
    topout,
    topout_batch,
)

SETTINGS = settings(max_examples=100, deadline=None)
rankings = st.lists(st.integers(0, 25), unique=True, min_size=1, max_size=15)


def test_jaccard_examples():
    assert jaccard("abcd", "bcde") == pytest.approx(3 / 5)
    assert jaccard("abcd", "dcba") == 1.0
    assert jaccard("abcd", "wxyz") == 0.0
    assert jaccard("abcdef", "abxyzf", k=2) == 1.0
    assert jaccard("abcdef", "abxyzf", k=3) == pytest.approx(2 / 4)
    # a list shorter than k contributes all its items
    assert jaccard("ab", "abcd", k=3) == pytest.approx(2 / 3)


def test_aod_worked_example_and_closed_forms():
    # Webber Fig. 5 lists: AO@7 = 0.3122..., so AOD@7 = 0.6877...
    assert aod("abcdefg", "zcavwxy", 7) == pytest.approx(1 - 0.31224489795918364, abs=1e-15)
    assert aod("abcdefg", "abcdefg", 7) == 0.0
    assert aod("abc", "xyz", 3) == 1.0
    # eq. 4.11 at k = 2 for ab / ba: 1 - (0/1 + 2/2)/2 = 0.5
    assert aod("ab", "ba", 2) == 0.5
    with pytest.raises(ValueError, match="depth"):
        aod("abc", "abcd", 4)


def test_topout_examples():
    assert topout("abc", "xya") == 0.0
    assert topout("abc", "xya", k=2) == 1.0
    assert topout("abc", "bca", k=1) == 1.0
    assert topout("abc", "axy", k=1) == 0.0
    # not symmetric: only the original list's top item matters
    assert topout("axy", "bca", k=3) == 0.0
    assert topout("bca", "axy", k=3) == 1.0


@SETTINGS
@given(rankings, rankings, st.integers(1, 20))
def test_jaccard_is_the_set_formula(a, b, k):
    sa, sb = set(a[:k]), set(b[:k])
    assert jaccard(a, b, k) == pytest.approx(len(sa & sb) / len(sa | sb), abs=1e-15)
    assert jaccard(a, b, k) == jaccard(b, a, k)
    assert jaccard(a, a, k) == 1.0


@SETTINGS
@given(rankings, rankings)
def test_aod_is_one_minus_average_overlap(a, b):
    k = min(len(a), len(b))
    assert aod(a, b, k) == 1.0 - average_overlap(a, b, k)
    assert aod(a, b) == aod(b, a)
    assert 0.0 <= aod(a, b) <= 1.0


@SETTINGS
@given(rankings, rankings, st.integers(1, 20))
def test_topout_is_eq_4_13(a, b, k):
    assert topout(a, b, k) == (0.0 if a[0] in b[:k] else 1.0)


@SETTINGS
@given(st.data())
def test_batches_equal_scalars_bitwise(data):
    rows = data.draw(st.integers(1, 10))
    wa, wb = data.draw(st.integers(1, 12)), data.draw(st.integers(1, 12))
    k = data.draw(st.integers(1, 14))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    a = np.stack([rng.permutation(20)[:wa] for _ in range(rows)]).astype(np.int32)
    b = np.stack([rng.permutation(20)[:wb] for _ in range(rows)]).astype(np.int32)
    la, lb = a.tolist(), b.tolist()
    assert jaccard_batch(a, b, k).tolist() == [jaccard(x, y, k) for x, y in zip(la, lb)]
    assert jaccard_batch(a, b).tolist() == [jaccard(x, y) for x, y in zip(la, lb)]
    assert topout_batch(a, b, k).tolist() == [topout(x, y, k) for x, y in zip(la, lb)]
    kk = min(k, wa, wb)
    assert aod_batch(a, b, kk).tolist() == [aod(x, y, kk) for x, y in zip(la, lb)]


def test_relabelling_changes_nothing():
    rng = np.random.default_rng(11)
    a, b = rng.permutation(30)[:12].tolist(), rng.permutation(30)[:12].tolist()
    names = {i: f"n{int(j)}" for i, j in enumerate(rng.permutation(10**5)[:30])}
    ra, rb = [names[i] for i in a], [names[i] for i in b]
    for k in (1, 5, 12):
        assert jaccard(ra, rb, k) == jaccard(a, b, k)
        assert aod(ra, rb, k) == aod(a, b, k)
        assert topout(ra, rb, k) == topout(a, b, k)


def test_validation():
    with pytest.raises(ValueError, match="k must be >= 1"):
        jaccard("abc", "abc", 0)
    with pytest.raises(ValueError, match="twice"):
        jaccard_batch(np.array([[1, 1]]), np.array([[1, 2]]))
    with pytest.raises(ValueError, match="original"):
        topout_batch(np.array([[1, 2]]), np.array([[1, 2], [2, 1]]))
    with pytest.raises(ValueError, match="twice"):
        topout("abc", "xyzx")
