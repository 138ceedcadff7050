"""Hand-made rating sets shared by the fuzzing tests.

The small log (4 users, 5 items) and its top-2 recommendations are worked out by hand in
``test_influence.py``::

    ratings  u0: i0=5 i1=3    u1: i1=4 i2=2    u2: i0=1 i3=5    u3: i4=3
    recs     u0: [2, 4]       u1: [0, 2]       u2: [1, 3]       u3: [] (none)
    attrs    i0 {A, B}  i1 {A}  i2 {C}  i3 {B, C}  i4 {D}
"""

from __future__ import annotations

import numpy as np
import pytest

from recaudit.data import Interactions
from recaudit.fuzz import Recommendations

RATINGS = [(0, 0, 5.0), (0, 1, 3.0), (1, 1, 4.0), (1, 2, 2.0), (2, 0, 1.0), (2, 3, 5.0),
           (3, 4, 3.0)]
ATTRS = {0: {"A", "B"}, 1: {"A"}, 2: {"C"}, 3: {"B", "C"}, 4: {"D"}}


@pytest.fixture
def small_log() -> Interactions:
    u, i, r = zip(*RATINGS, strict=True)
    return Interactions.from_codes(u, i, timestamp=[10, 11, 20, 21, 30, 31, 40], rating=r,
                                   n_users=4, n_items=5, item_attributes=ATTRS, name="hand")


@pytest.fixture
def small_recs() -> Recommendations:
    return Recommendations(np.arange(4), np.array([[2, 4], [0, 2], [1, 3], [-1, -1]]))


def random_log(seed: int, n_users: int = 30, n_items: int = 40, n: int = 300,
               attrs: bool = True) -> Interactions:
    """A random rating log with unique (user, item) pairs and half-star ratings."""
    rng = np.random.default_rng(seed)
    keys = rng.choice(n_users * n_items, size=n, replace=False)
    ratings = rng.integers(1, 11, size=n) / 2.0
    labels = ["a", "b", "c", "d", "e"]
    item_attributes = {i: set(rng.choice(labels, size=rng.integers(1, 4), replace=False))
                       for i in range(n_items)} if attrs else None
    return Interactions.from_codes(keys // n_items, keys % n_items,
                                   timestamp=rng.integers(0, 1000, size=n), rating=ratings,
                                   n_users=n_users, n_items=n_items,
                                   item_attributes=item_attributes, name="random")


def popularity_recs(log: Interactions, k: int = 5) -> Recommendations:
    """Stand-in recommender: each user's k most-rated unrated items (ties: lower code)."""
    counts = log.item_counts().astype(float)
    scores = np.broadcast_to(counts, (log.n_users, log.n_items)).copy()
    scores[log.user, log.item] = -np.inf
    order = np.lexsort((np.broadcast_to(np.arange(log.n_items), scores.shape), -scores), axis=1)
    return Recommendations(np.arange(log.n_users), order[:, :k])


class Helpers:
    random_log = staticmethod(random_log)
    popularity_recs = staticmethod(popularity_recs)


@pytest.fixture
def fz() -> type[Helpers]:
    """Helper functions (tests import nothing from conftest under importlib mode)."""
    return Helpers
