import numpy as np
import pandas as pd
import pytest

from recaudit.data import Interactions, Queries, RankLists
from recaudit.errors import DataError


def test_rows_are_stably_sorted_by_timestamp():
    log = Interactions.from_codes([0, 1, 2, 3], [0, 1, 2, 3], [5, 1, 5, 1])
    # ties keep original row order: (1: row1, row3), (5: row0, row2)
    assert log.user.tolist() == [1, 3, 0, 2]
    assert log.timestamp.tolist() == [1, 1, 5, 5]


def test_arrays_are_read_only_and_caller_arrays_untouched():
    user = np.array([0, 1, 1])
    log = Interactions.from_codes(user, [0, 0, 1], [1, 2, 3])
    assert user.flags.writeable
    with pytest.raises(ValueError):
        log.user[0] = 5
    user[0] = 1  # the log keeps its own copy
    assert log.user[0] == 0


def test_from_df_factorizes_ids_and_maps_back():
    df = pd.DataFrame({"u": ["b", "a", "b"], "i": [30, 10, 20], "t": [3, 1, 2]})
    log = Interactions.from_df(df, {"user": "u", "item": "i", "timestamp": "t"})
    assert log.n_users == 2 and log.n_items == 3
    back = log.to_df()
    assert back["user"].tolist() == ["a", "b", "b"]
    assert back["item"].tolist() == [10, 20, 30]
    assert log.user.dtype == np.int32 and log.item.dtype == np.int32


def test_take_keeps_code_space_and_fingerprint_changes():
    log = Interactions.from_codes([0, 1, 2], [0, 1, 2], [1, 2, 3])
    sub = log.take(np.array([True, False, True]))
    assert sub.n_users == 3 and sub.n_items == 3 and len(sub) == 2
    assert sub.fingerprint() != log.fingerprint()
    assert log.take(np.arange(3)).fingerprint() == log.fingerprint()


def test_invalid_codes_and_nan_timestamps_are_reported():
    with pytest.raises(DataError, match="item codes"):
        Interactions(np.array([0]), np.array([3]), np.array([1]), None, np.arange(1), np.arange(2))
    with pytest.raises(DataError, match="NaN"):
        Interactions.from_codes([0], [0], [np.nan])


def test_user_sequences_csr():
    log = Interactions.from_codes([1, 0, 1, 0], [0, 1, 2, 3], [1, 2, 3, 4], n_users=3)
    indptr, rows = log.user_sequences()
    assert indptr.tolist() == [0, 2, 4, 4]
    assert log.item[rows[indptr[1]:indptr[2]]].tolist() == [0, 2]


def test_queries_next_item_and_padding():
    log = Interactions.from_codes([0, 0, 0, 1], [4, 5, 6, 7], [1, 2, 3, 4], n_items=8)
    q = Queries.next_item(log, max_len=2)
    assert q.user.tolist() == [0, 1]
    assert q.context(0).tolist() == [5, 6]
    items, _ = q.padded(3)
    assert items.tolist() == [[-1, 5, 6], [-1, -1, 7]]
    assert (q.target == -1).all()


def test_ranklists_validate_shape_and_top():
    rl = RankLists(np.array([[3, 1, 2], [0, 2, 1]]))
    assert rl.top(2).items.tolist() == [[3, 1], [0, 2]]
    with pytest.raises(ValueError):
        RankLists(np.array([1, 2, 3]))
    with pytest.raises(ValueError):
        rl.top(0)
