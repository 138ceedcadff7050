"""Kendall's tau against scipy and closed forms."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import kendalltau

from recaudit.metrics import kendall_tau, kendall_tau_batch


def test_closed_forms():
    assert kendall_tau("abcd", "abcd") == 1.0
    assert kendall_tau("abcd", "dcba") == -1.0
    # one adjacent swap among n items: tau = 1 - 4 / (n (n - 1))
    assert kendall_tau("abcde", "bacde") == pytest.approx(1 - 4 / 20)


@settings(max_examples=100, deadline=None)
@given(st.permutations(range(12)), st.permutations(range(12)))
def test_matches_scipy(a, b):
    pos_b = {item: i for i, item in enumerate(b)}
    ref = kendalltau(range(len(a)), [pos_b[i] for i in a]).statistic
    assert kendall_tau(a, b) == pytest.approx(ref, abs=1e-12)
    assert kendall_tau(a, b) == kendall_tau(b, a)


def test_batch_equals_scalar_and_scipy_on_long_rankings():
    rng = np.random.default_rng(2)
    a = rng.permuted(np.tile(np.arange(500), (40, 1)), axis=1)
    b = rng.permuted(np.tile(np.arange(500), (40, 1)), axis=1)
    got = kendall_tau_batch(a, b)
    assert got.tolist() == [kendall_tau(x, y) for x, y in zip(a.tolist(), b.tolist())]
    for i in range(3):
        pos_b = np.argsort(b[i])
        assert got[i] == pytest.approx(kendalltau(np.arange(500), pos_b[a[i]]).statistic, abs=1e-12)


def test_validation():
    with pytest.raises(ValueError, match="same items"):
        kendall_tau("abc", "abd")
    with pytest.raises(ValueError, match="same items"):
        kendall_tau("abc", "ab")
    with pytest.raises(ValueError, match="at least 2"):
        kendall_tau("a", "a")
    with pytest.raises(ValueError, match="row 1.*b lists an item twice"):
        kendall_tau_batch(np.array([[0, 1], [0, 1]]), np.array([[0, 1], [1, 1]]))
    with pytest.raises(ValueError, match="row 0.*same items"):
        kendall_tau_batch(np.array([[0, 1]]), np.array([[0, 2]]))


def test_sparse_codes_are_remapped():
    rng = np.random.default_rng(8)
    items = rng.choice(10**7, size=50, replace=False)
    a = np.stack([rng.permutation(items) for _ in range(4)])
    b = np.stack([rng.permutation(items) for _ in range(4)])
    assert kendall_tau_batch(a, b).tolist() == [kendall_tau(x, y) for x, y in zip(a.tolist(), b.tolist())]
