import pytest

from recaudit.data import Interactions


@pytest.fixture
def small_log():
    """Hand-made log (rows already in time order).

    row user item ts
     0    0    0  10
     1    1    1  10
     2    0    1  20
     3    2    2  30
     4    0    2  40
     5    1    0  50
     6    2    3  60
    """
    return Interactions.from_codes([0, 1, 0, 2, 0, 1, 2], [0, 1, 1, 2, 2, 0, 3],
                                   [10, 10, 20, 30, 40, 50, 60], n_items=5)


def random_log(rng, n, n_users, n_items, n_times, rating=False):
    ratings = rng.integers(1, 6, n).astype(float) if rating else None
    return Interactions.from_codes(rng.integers(0, n_users, n), rng.integers(0, n_items, n),
                                   rng.integers(0, n_times, n), ratings,
                                   n_users=n_users, n_items=n_items)
