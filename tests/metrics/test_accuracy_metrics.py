"""Accuracy metrics: closed forms, a naive reference, batch == scalar, validation."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from recaudit.metrics import (
    hit_rate_at_k,
    hit_rate_at_k_batch,
    mrr,
    mrr_batch,
    ndcg_at_k,
    ndcg_at_k_batch,
    precision_at_k,
    precision_at_k_batch,
    recall_at_k,
    recall_at_k_batch,
    target_ranks,
)

SCALARS = {
    "hit": hit_rate_at_k,
    "recall": recall_at_k,
    "precision": precision_at_k,
    "ndcg": ndcg_at_k,
}
BATCHES = {
    "hit": hit_rate_at_k_batch,
    "recall": recall_at_k_batch,
    "precision": precision_at_k_batch,
    "ndcg": ndcg_at_k_batch,
}


def reference(ranking, relevant, k):
    """Textbook definitions, written independently of the kernel."""
    top = ranking[:k]
    hits = [r for r, item in enumerate(top) if item in relevant]
    first = next((r for r, item in enumerate(ranking[:k]) if item in relevant), None)
    idcg = sum(1 / math.log2(r + 2) for r in range(min(len(relevant), k)))
    return {
        "rr": 0.0 if first is None else 1 / (first + 1),
        "hit": float(bool(hits)),
        "recall": len(hits) / len(relevant),
        "precision": len(hits) / k,
        "ndcg": sum(1 / math.log2(r + 2) for r in hits) / idcg,
    }


def test_single_target_closed_forms():
    ranking = list("abcdefghij")
    assert mrr(ranking, "d") == 0.25
    assert mrr(ranking, "z") == 0.0
    assert mrr(ranking, "d", k=3) == 0.0
    assert ndcg_at_k(ranking, "c", 5) == pytest.approx(1 / math.log2(4))
    assert ndcg_at_k(ranking, "a", 1) == 1.0
    assert ndcg_at_k(ranking, "f", 5) == 0.0
    assert hit_rate_at_k(ranking, "e", 5) == 1.0
    assert hit_rate_at_k(ranking, "f", 5) == 0.0
    assert precision_at_k(ranking, "e", 5) == 0.2


@settings(max_examples=100, deadline=None)
@given(st.permutations(range(15)), st.integers(0, 14), st.integers(1, 20))
def test_recall_equals_hit_rate_for_one_target(ranking, target, k):
    assert recall_at_k(ranking, target, k) == hit_rate_at_k(ranking, target, k)


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.integers(0, 30), unique=True, min_size=1, max_size=20),
    st.sets(st.integers(0, 35), min_size=1, max_size=5),
    st.integers(1, 25),
)
def test_matches_reference(ranking, relevant, k):
    ref = reference(ranking, relevant, k)
    assert mrr(ranking, relevant, k) == pytest.approx(ref["rr"], abs=1e-15)
    for name, fn in SCALARS.items():
        assert fn(ranking, relevant, k) == pytest.approx(ref[name], abs=1e-12), name


@settings(max_examples=80, deadline=None)
@given(st.data())
def test_batch_equals_scalar_bitwise(data):
    rows = data.draw(st.integers(1, 10))
    depth = data.draw(st.integers(1, 20))
    k = data.draw(st.integers(1, 25))
    m = data.draw(st.integers(1, 4))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    items = np.stack([rng.permutation(25)[:depth] for _ in range(rows)]).astype(np.int32)
    targets = np.stack([rng.permutation(25)[:m] for _ in range(rows)])
    targets[:, 1:][rng.random((rows, m - 1)) < 0.3] = -1  # padding
    for name, fn in BATCHES.items():
        want = [SCALARS[name](items[i].tolist(), set(targets[i][targets[i] >= 0].tolist()), k) for i in range(rows)]
        assert fn(items, targets, k).tolist() == want, name
    want = [mrr(items[i].tolist(), set(targets[i][targets[i] >= 0].tolist())) for i in range(rows)]
    assert mrr_batch(items, targets).tolist() == want
    # one target per row: the 1-D form
    single = targets[:, 0]
    assert recall_at_k_batch(items, single, k).tolist() == hit_rate_at_k_batch(items, single, k).tolist()
    assert mrr_batch(items, single, k).tolist() == [mrr(items[i].tolist(), int(single[i]), k) for i in range(rows)]


def test_target_ranks():
    rng = np.random.default_rng(4)
    items = rng.permuted(np.tile(np.arange(1000), (2000, 1)), axis=1)[:, :300]
    targets = rng.integers(0, 1000, 2000)
    ranks = target_ranks(items, targets)
    hit = items == targets[:, None]
    expected = np.where(hit.any(axis=1), hit.argmax(axis=1), -1)
    assert ranks.dtype == np.int64
    np.testing.assert_array_equal(ranks, expected)
    rr = mrr_batch(items, targets)
    expected_rr = np.divide(1.0, expected + 1.0, out=np.zeros(len(expected)), where=expected >= 0)
    np.testing.assert_array_equal(rr, expected_rr)
    # per-query values: the dataset MRR is their mean
    assert rr.mean() == pytest.approx(np.mean([1 / (r + 1) if r >= 0 else 0 for r in expected]))


def test_validation():
    items = np.array([[0, 1, 2], [2, 1, 0]])
    with pytest.raises(ValueError, match="row 1 has no relevant item"):
        mrr_batch(items, np.array([1, -1]))
    with pytest.raises(ValueError, match="rows"):
        mrr_batch(items, np.array([1]))
    with pytest.raises(ValueError, match="twice"):
        recall_at_k_batch(items, np.array([[1, 1], [0, -1]]), 2)
    with pytest.raises(ValueError, match="k must be >= 1"):
        ndcg_at_k_batch(items, np.array([1, 2]), 0)
    with pytest.raises(ValueError, match="empty"):
        recall_at_k("abc", set(), 2)
    with pytest.raises(TypeError, match="integer"):
        mrr_batch(items, np.array([1.0, 2.0]))
