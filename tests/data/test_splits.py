import numpy as np
import pytest

from recaudit.data import (
    Interactions,
    compact,
    filter_min_interactions,
    global_temporal_split,
    k_core,
    leave_last_out,
    split,
    synthetic,
    temporal_ratio_split,
)
from recaudit.errors import ConfigError


@pytest.fixture(scope="module")
def log():
    return filter_min_interactions(synthetic(seed=3, n_users=120, n_items=80))


def _keys(log):
    return set(zip(log.user.tolist(), log.item.tolist(), log.timestamp.tolist()))


def test_temporal_ratio_split_by_hand():
    # user 0: 10 rows -> 9 train + 1 test; user 1: 3 rows -> floor(2.7) = 2 train + 1 test
    user = [0] * 10 + [1] * 3
    log = Interactions.from_codes(user, list(range(10)) + [0, 1, 2],
                                  list(range(10)) + [0.5, 1.5, 2.5])
    s = temporal_ratio_split(log, 0.9)
    assert len(s.train) == 11 and len(s.test) == 2
    assert sorted(zip(s.test.user.tolist(), s.test.item.tolist())) == [(0, 9), (1, 2)]
    # queries ask for the test items with the preceding history as context
    q0 = int(np.flatnonzero(s.queries.user == 0)[0])
    assert s.queries.target[q0] == 9
    assert s.queries.context(q0).tolist() == list(range(9))


@pytest.mark.parametrize("method", ["temporal-ratio", "leave-last-out", "global-temporal"])
def test_no_test_interaction_leaks_into_training(log, method):
    s = split(log, method)
    assert len(s.train) + len(s.test) == len(log)
    assert not (_keys(s.train) & _keys(s.test))
    assert len(s.queries) == len(s.test)
    assert np.array_equal(s.queries.target, s.test.item)
    # every training row of a user precedes (or ties) that user's test rows
    for u in np.unique(s.test.user)[:30]:
        tr = s.train.timestamp[s.train.user == u]
        te = s.test.timestamp[s.test.user == u]
        if len(tr):
            assert tr.max() <= te.min()


def test_queries_context_comes_from_original_log(log):
    s = temporal_ratio_split(log, 0.8, max_len=5)
    indptr, rows = log.user_sequences()
    for q in range(0, len(s.queries), 37):
        u = s.queries.user[q]
        seq_items = log.item[rows[indptr[u]:indptr[u + 1]]]
        seq_ts = log.timestamp[rows[indptr[u]:indptr[u + 1]]]
        j = int(np.flatnonzero((seq_ts == s.queries.timestamp[q])
                               & (seq_items == s.queries.target[q]))[0])
        assert s.queries.context(q).tolist() == seq_items[max(0, j - 5):j].tolist()


def test_leave_last_out_with_validation():
    log = Interactions.from_codes([0, 0, 0, 0, 1, 1], [1, 2, 3, 4, 5, 6], [1, 2, 3, 4, 5, 6])
    s = leave_last_out(log, validation=True)
    assert s.test.item.tolist() == [4, 6]
    assert s.validation.target.tolist() == [3]
    assert s.train.item.tolist() == [1, 2, 5]


def test_global_temporal_split_never_splits_a_tie():
    log = Interactions.from_codes([0, 1, 2, 3], [0, 1, 2, 3], [1, 2, 2, 3])
    s = global_temporal_split(log, 0.5)  # cut after row 2 (t=2), its tie stays in train
    assert s.train.timestamp.tolist() == [1, 2, 2] and s.test.timestamp.tolist() == [3]


def test_filters():
    log = Interactions.from_codes([0, 0, 0, 1, 2, 2], [0, 1, 2, 0, 1, 3], n_items=5)
    f = filter_min_interactions(log, 2)
    assert f.n_users == 2 and f.user_ids.tolist() == [0, 2]
    assert f.n_items == 4  # items 0,1,2,3 used; 4 never used -> dropped by compact
    core = k_core(log, 2)
    # 2-core by hand: round 1 keeps rows with user count >= 2 and item count >= 2:
    # (0,0), (0,1), (2,1); round 2: item 0 and user 2 now have one row -> (0,1) left;
    # round 3: user 0 has one row -> empty. The iterated filter must reach the empty core.
    assert len(core) == 0
    assert len(k_core(log, 1)) == len(log)
    assert compact(log).n_items == 4


def test_unknown_split_suggests_closest():
    with pytest.raises(ConfigError, match="leave-last-out"):
        split(Interactions.from_codes([0], [0]), "leave-last")


def _log_with_lengths(lengths):
    import pandas as pd

    from recaudit.data import Interactions

    rows = [(u, (u * 7 + j) % 50, j) for u, n in enumerate(lengths) for j in range(n)]
    return Interactions.from_df(pd.DataFrame(rows, columns=["user", "item", "timestamp"]))


def test_temporal_ratio_floor_test_rounds_the_test_part_down():
    from recaudit.data import temporal_ratio_split

    log = _log_with_lengths([15, 10, 9, 21])
    by_user = lambda s: np.bincount(s.train.user, minlength=4).tolist()  # noqa: E731
    # train part rounded down: 13, 9, 8, 18 train rows; test part rounded down (CASPER's code,
    # int(0.1 * n) test rows): 14, 9, 9 (no test row), 19
    assert by_user(temporal_ratio_split(log, 0.9)) == [13, 9, 8, 18]
    s = temporal_ratio_split(log, 0.9, floor="test")
    assert by_user(s) == [14, 9, 9, 19]
    assert np.bincount(s.test.user, minlength=4).tolist() == [1, 1, 0, 2]
    with pytest.raises(ValueError, match="floor"):
        temporal_ratio_split(log, 0.9, floor="ceil")


def test_sample_users_is_a_seeded_sample_of_whole_users():
    from recaudit.data import sample_users

    log = _log_with_lengths([3, 5, 2, 8, 4, 6, 7])
    a, b = sample_users(log, 3), sample_users(log, 3)
    assert a.n_users == 3 and a.fingerprint() == b.fingerprint()
    kept = sorted(log.user_ids[u] for u in np.unique(log.user) if (
        log.user_ids[u] in set(a.user_ids)))
    counts = dict(zip(log.user_ids, np.bincount(log.user)))
    assert sorted(np.bincount(a.user).tolist()) == sorted(counts[u] for u in kept)
    others = {tuple(sample_users(log, 3, seed=s).user_ids) for s in range(8)}
    assert len(others) > 1                       # the seed changes the sample
    assert sample_users(log, 50).n_users == 7    # n >= users: everything
    with pytest.raises(ValueError, match="n must be"):
        sample_users(log, 0)
