"""FRBO@k (Betello et al.): closed forms, Lemma 1 minimum, short-list rule, batch == scalar."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from recaudit.metrics import frbo, frbo_batch, rbo, rbo_at_k_bounds

SETTINGS = settings(max_examples=100, deadline=None)


def naive_rbo_at_k(a, b, p, k):
    return (1 - p) * math.fsum(p ** (d - 1) * len(set(a[:d]) & set(b[:d])) / d for d in range(1, k + 1))


@pytest.mark.parametrize("k", [1, 2, 10, 20, 500])
@pytest.mark.parametrize("p", [0.5, 0.9, 0.99])
def test_identical_is_one_disjoint_is_zero(k, p):
    a = list(range(k))
    assert frbo(a, a, k, p) == 1.0
    assert frbo(a, [i + k for i in a], k, p) == 0.0
    assert frbo(a, a, k, p, n_items=3 * k) == 1.0


def test_paper_simplified_form_without_catalogue_size():
    # Betello et al. eq. after Lemma 2: FRBO@k = (1-p)/(1-p^k) * sum_{d<=k} p^{d-1} X_d / d
    rng = np.random.default_rng(0)
    for _ in range(30):
        a, b = rng.permutation(60)[:25].tolist(), rng.permutation(60)[:25].tolist()
        k, p = int(rng.integers(1, 26)), float(rng.uniform(0.1, 0.95))
        assert frbo(a, b, k, p) == pytest.approx(naive_rbo_at_k(a, b, p, k) / (1 - p**k), abs=1e-12)
        assert frbo(a, b, k, p) == pytest.approx(rbo(a[:k], b[:k], p, variant="trunc") / (1 - p**k), abs=1e-12)


@pytest.mark.parametrize("n", [1, 2, 3, 4, 5])
def test_lemma1_minimum_is_attained_and_is_the_minimum(n):
    # brute force over every pair of k-item rankings from an n-item catalogue
    p = 0.8
    for k in range(1, n + 1):
        lo, hi = rbo_at_k_bounds(k, p, n)
        values = [
            naive_rbo_at_k(list(a), list(b), p, k)
            for a in itertools.permutations(range(n), k)
            for b in itertools.permutations(range(n), k)
        ]
        assert min(values) == pytest.approx(lo, abs=1e-14)
        assert max(values) == pytest.approx(hi, abs=1e-14)
        assert hi == pytest.approx(1 - p**k, abs=1e-15)
        if k <= n // 2:
            assert lo == 0.0
        # the extremal pair: 1..k against N..N-k+1 gives exactly 0
        a, b = list(range(k)), list(range(n - 1, n - 1 - k, -1))
        if n > 1:
            assert frbo(a, a, k, p, n_items=n) == 1.0
            assert frbo(a, b, k, p, n_items=n) == 0.0


def test_lemma1_upper_limit_is_k_not_n():
    # the paper prints the minimum's sum up to N; with k < N that would exceed what k-item lists
    # can reach. Here N = 10, k = 7: the minimum overlap is max(0, 2d - 10) at depths 6, 7.
    p, n, k = 0.9, 10, 7
    lo, _ = rbo_at_k_bounds(k, p, n)
    assert lo == pytest.approx((1 - p) * (p**5 * 2 / 6 + p**6 * 4 / 7), abs=1e-15)
    wrong = (1 - p) * sum(p ** (d - 1) * (2 * d - n) / d for d in range(6, n + 1))
    assert lo < wrong


@SETTINGS
@given(st.data())
def test_bounds_and_symmetry(data):
    n = data.draw(st.integers(2, 20))
    k = data.draw(st.integers(1, n))
    p = data.draw(st.floats(0.05, 0.95))
    a = data.draw(st.permutations(range(n)))[:k]
    b = data.draw(st.permutations(range(n)))[:k]
    for n_items in (None, n):
        v = frbo(a, b, k, p, n_items=n_items)
        assert -1e-12 <= v <= 1 + 1e-12
        assert v == frbo(b, a, k, p, n_items=n_items)


@SETTINGS
@given(st.data())
def test_batch_equals_scalar_bitwise(data):
    n_items = data.draw(st.integers(2, 30))
    rows = data.draw(st.integers(1, 10))
    width = data.draw(st.integers(1, n_items))
    k = data.draw(st.integers(1, width))
    p = data.draw(st.floats(0.05, 0.95))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    a = np.stack([rng.permutation(n_items)[:width] for _ in range(rows)])
    b = np.stack([rng.permutation(n_items)[:width] for _ in range(rows)])
    for n in (None, n_items):
        want = [frbo(a[i].tolist(), b[i].tolist(), k, p, n_items=n) for i in range(rows)]
        assert frbo_batch(a, b, k, p, n_items=n).tolist() == want


def test_short_lists_are_an_error_not_a_different_formula():
    with pytest.raises(ValueError, match="at least k = 5"):
        frbo("abc", "abcdef", 5)
    with pytest.raises(ValueError, match="at least k = 5"):
        frbo_batch(np.zeros((2, 3), int) + np.arange(3), np.zeros((2, 3), int) + np.arange(3), 5)
    # longer lists are cut to their top k
    assert frbo("abcxyz", "abcuvw", 3) == 1.0


def test_invalid_arguments():
    with pytest.raises(ValueError, match="k must be >= 1"):
        frbo("abc", "abc", 0)
    with pytest.raises(TypeError, match="integer"):
        frbo("abc", "abc", 2.5)
    with pytest.raises(ValueError, match="p"):
        frbo("abc", "abc", 2, p=1.0)
    with pytest.raises(ValueError, match="exceeds n_items"):
        frbo("abc", "abc", 3, n_items=2)
    with pytest.raises(ValueError, match="n_items"):
        frbo("abc", "cde", 3, n_items=4)
    with pytest.raises(ValueError, match="undefined"):
        frbo("a", "a", 1, n_items=1)
    with pytest.raises(ValueError, match="outside"):
        frbo_batch(np.array([[0, 5]]), np.array([[0, 1]]), 2, n_items=4)
    with pytest.raises(ValueError, match="twice"):
        frbo("aba", "abc", 3)
