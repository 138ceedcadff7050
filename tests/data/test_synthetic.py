import numpy as np
import pytest

from recaudit.data import synthetic
from recaudit.errors import ConfigError


def test_same_seed_same_log_and_different_seed_differs():
    a, b, c = synthetic(seed=7), synthetic(seed=7), synthetic(seed=8)
    assert a.fingerprint() == b.fingerprint()
    assert a.fingerprint() != c.fingerprint()


def test_shape_of_the_default_log():
    log = synthetic(seed=0)
    counts = log.user_counts()
    assert counts.min() >= 10 and counts.max() <= 500
    # long tail: the most active user has several times the median activity
    assert counts.max() > 3 * np.median(counts)
    # Zipf-like popularity: top 10 % of items get a large share of interactions
    ic = np.sort(log.item_counts())[::-1]
    assert ic[: len(ic) // 10].sum() > 0.3 * ic.sum()
    # timestamps strictly increase within each user
    indptr, rows = log.user_sequences()
    ts = log.timestamp[rows]
    within = np.ones(len(rows) - 1, dtype=bool)
    within[indptr[1:-1] - 1] = False
    assert (np.diff(ts)[within] > 0).all()


def test_planted_successor_pattern_is_present():
    log = synthetic(seed=1, follow=0.5)
    indptr, rows = log.user_sequences()
    items = log.item[rows]
    pairs = {}
    for u in range(log.n_users):
        seq = items[indptr[u]:indptr[u + 1]]
        for a, b in zip(seq[:-1], seq[1:]):
            pairs.setdefault(int(a), []).append(int(b))
    # the most frequent successor of an item follows it far more often than chance
    share = [np.bincount(v).max() / len(v) for v in pairs.values() if len(v) >= 20]
    assert np.median(share) > 0.3


def test_ratings_and_attributes_optional():
    log = synthetic(seed=2, n_users=50, n_items=40, ratings=True, attributes=True)
    assert log.rating is not None and set(np.unique(log.rating)) <= {1, 2, 3, 4, 5}
    assert len(log.item_attributes) == 40
    assert all(any(g.startswith("genre-") for g in v) for v in log.item_attributes.values())


def test_bad_parameters():
    with pytest.raises(ValueError, match="n_clusters"):
        synthetic(n_items=5, n_clusters=10)
    with pytest.raises(ConfigError, match="Did you mean 'n_users'"):
        synthetic(n_user=5)
