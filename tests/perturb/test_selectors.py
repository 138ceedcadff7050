"""Selectors: random, earliest/latest-random, TracIn (fake model), Rev.Adv."""

import numpy as np
import pytest

from recaudit.data import Interactions, Queries
from recaudit.errors import ConfigError
from recaudit.perturb import (SupportsTracIn, craft_fake_user, parse, select_earliest_random,
                              select_latest_random, select_random, select_rev_adv,
                              tracin_scores)

from .conftest import random_log


def test_random_distinct_and_seeded(small_log):
    rows, scores = select_random(small_log, 7, np.random.default_rng(1))
    assert sorted(rows.tolist()) == list(range(7)) and len(scores) == 0
    a = select_random(small_log, 3, np.random.default_rng(9))[0]
    assert np.array_equal(a, select_random(small_log, 3, np.random.default_rng(9))[0])
    with pytest.raises(ValueError, match="only 7"):
        select_random(small_log, 8, np.random.default_rng(0))


def test_earliest_and_latest(small_log):
    # users' first rows: 0 (user 0), 1 (user 1), 3 (user 2); last rows: 4, 5, 6
    rows, _ = select_earliest_random(small_log, 3, np.random.default_rng(0))
    assert sorted(rows.tolist()) == [0, 1, 3]
    rows, _ = select_latest_random(small_log, 3, np.random.default_rng(0))
    assert sorted(rows.tolist()) == [4, 5, 6]
    for seed in range(10):
        (r,), _ = select_earliest_random(small_log, 1, np.random.default_rng(seed))
        assert r in (0, 1, 3)
    with pytest.raises(ValueError, match="users"):
        select_latest_random(small_log, 4, np.random.default_rng(0))


class FakeTracIn:
    """Gradients by hand: at checkpoint c, g_train(r) = c * [r - 3, 1], g_test = [[1, 0], [0, 2]].

    score(r) = sum_c lr_c * c * ((r - 3) * 1 + 1 * 2) = (0.5 * 1 + 0.25 * 2) * (r - 1) = r - 1
    """

    def __init__(self):
        self.calls = 0

    def checkpoint_gradients(self, train, rows, queries):
        self.calls += 1
        for c, lr in ((1, 0.5), (2, 0.25)):
            rows = np.asarray(rows, dtype=float)
            yield lr, c * np.stack([rows - 3, np.ones_like(rows)], axis=1), \
                np.array([[1.0, 0.0], [0.0, 2.0]])


def test_tracin_scores_hand_computed(small_log):
    model = FakeTracIn()
    assert isinstance(model, SupportsTracIn)
    queries = Queries.next_item(small_log)
    assert np.allclose(tracin_scores(model, small_log, queries), np.arange(7) - 1.0)
    assert np.allclose(tracin_scores(model, small_log, queries, rows=[5, 2], chunk_size=1),
                       [4.0, 1.0])
    assert model.calls == 3  # once, then once per chunk of one row


def test_tracin_selector_picks_most_influential(small_log):
    spec = parse("tracin-delete-k2")
    out, rec = spec.apply(small_log, np.random.default_rng(0), model=FakeTracIn(),
                          queries=Queries.next_item(small_log))
    assert rec.rows == (6, 5) and rec.scores == (5.0, 4.0) and len(out) == 5
    with pytest.raises(ConfigError, match="tracin"):
        spec.apply(small_log, np.random.default_rng(0))


class FakeStream:
    """One checkpoint (lr 2) streamed in chunks, with one-hot keys and no bias: row ``r`` has
    ``D = [r, 1]``, ``H = [1]``, key ``r % 2``; the two queries ``D = [1, 0]``, ``[0, 1]``,
    ``H = [1]``, ``[2]``, keys 0 and 1. With ``G . G' = (D . D')(H . H' + [K = K'])``:

    score(r) = 2 * (r * (1 + [r even]) + 1 * (2 + [r odd]))
    """

    def __init__(self, fault=None):
        self.fault = fault

    def checkpoint_gradients(self, train, rows, queries):  # the protocol's marker
        raise AssertionError("a streaming model is read through its stream")

    def checkpoint_factor_stream(self, train, rows, queries, chunk_size):
        test = (np.array([[1.0, 0.0], [0.0, 1.0]]), np.array([[1.0], [2.0]]),
                np.array([[0], [1]]))

        def chunks():
            parts = [rows[lo:lo + chunk_size][::-1] for lo in range(0, len(rows), chunk_size)]
            if self.fault == "left out":
                parts = parts[:-1]
            if self.fault == "twice":
                parts.append(rows[:1])
            for part in parts:
                yield part, (np.stack([part, np.ones(len(part))], 1).astype(float),
                             np.ones((len(part), 1)), (part % 2)[:, None])

        yield 2.0, test, False, chunks()


def test_tracin_scores_of_a_streamed_model_with_keys(small_log):
    r = np.arange(len(small_log))
    expected = 2.0 * (r * (1 + (r % 2 == 0)) + 2 + (r % 2 == 1))
    queries = Queries.next_item(small_log)
    assert np.allclose(tracin_scores(FakeStream(), small_log, queries), expected)
    assert np.allclose(tracin_scores(FakeStream(), small_log, queries, rows=[3, 0, 3],
                                     chunk_size=1), expected[[3, 0, 3]])
    for fault, match in (("left out", "left 1 row"), ("twice", "a row twice")):
        with pytest.raises(ValueError, match=match):
            tracin_scores(FakeStream(fault), small_log, queries, chunk_size=2)


def test_tracin_rejects_models_without_gradients(small_log):
    with pytest.raises(TypeError, match="checkpoint_gradients"):
        tracin_scores(object(), small_log, Queries.next_item(small_log))


def test_rev_adv_maps_profile_to_most_similar_users():
    # user 0: items {0,1,2} (rows 0,3,5), user 1: {0,1} (rows 1,4), user 2: {3} (row 2).
    # fake profile {0,1}: cosine u1 = 2/sqrt(2*2) = 1, u0 = 2/sqrt(3*2) = 0.816, u2 = 0
    log = Interactions.from_codes([0, 1, 2, 0, 1, 0], [0, 0, 3, 1, 1, 2], np.arange(6))
    rows, sims = select_rev_adv(log, 2, np.random.default_rng(0), fake=np.array([0, 1]))
    assert rows.tolist() == [1, 0]  # each user's earliest interaction
    assert np.allclose(sims, [1.0, 2 / np.sqrt(6)])
    rows, _ = select_rev_adv(log, 1, np.random.default_rng(0), variant="random",
                             fake=np.array([0, 1]))
    assert rows[0] in (1, 4)


def test_crafted_profile_is_valid():
    user = [u for u in range(10) for _ in range(5)] + [10, 10, 11, 11]
    item = [i for _ in range(10) for i in range(5)] + [9, 9, 9, 9]
    log = Interactions.from_codes(user, item, np.arange(len(user)), n_items=12)
    fake = craft_fake_user(log, np.random.default_rng(0))
    # m = min(median distinct items per user (5), items in the log (6) // 2) = 3 seen items
    assert len(fake) == 3 and len(set(fake.tolist())) == 3
    assert set(fake.tolist()) <= {0, 1, 2, 3, 4, 9}
    assert np.array_equal(fake, craft_fake_user(log, np.random.default_rng(0)))


def test_rev_adv_deterministic_and_random_variant():
    log = random_log(np.random.default_rng(3), 300, 20, 15, 1000)
    a = select_rev_adv(log, 3, np.random.default_rng(7), variant="random")
    b = select_rev_adv(log, 3, np.random.default_rng(7), variant="random")
    assert np.array_equal(a[0], b[0]) and np.array_equal(a[1], b[1])
    with pytest.raises(ValueError, match="variant"):
        select_rev_adv(log, 1, np.random.default_rng(0), variant="latest")
