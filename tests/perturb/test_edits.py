"""Delete / insert / replace on the hand-made log of conftest (answers worked out by hand)."""

import numpy as np
import pytest

from recaudit.data import Interactions
from recaudit.errors import DataError
from recaudit.perturb import delete_rows, insert_after, replace_items

# small_log: row user item ts: 0 0 0 10 | 1 1 1 10 | 2 0 1 20 | 3 2 2 30 | 4 0 2 40 | 5 1 0 50 |
# 6 2 3 60; item counts i0:2 i1:2 i2:2 i3:1 i4:0 (never occurs)


def rows_of(log):
    return list(zip(log.user.tolist(), log.item.tolist(), log.timestamp.tolist()))


def test_delete(small_log):
    out, rec = delete_rows(small_log, [2, 5])
    assert rows_of(out) == [(0, 0, 10), (1, 1, 10), (2, 2, 30), (0, 2, 40), (2, 3, 60)]
    assert rec.kind == "delete" and rec.deleted == (2, 5) and rec.users == (0, 1)
    assert out.n_items == 5 and out.n_users == 3  # code space kept


@pytest.mark.parametrize("strategy,new", [("popular", 2), ("unpopular", 3)])
def test_replace_strategies(small_log, strategy, new):
    # row 5 (user 1, item 0): excluded item 0 (there) and item 1 (user 1's previous row 1);
    # candidates i2 (2 interactions), i3 (1); i4 never occurs so is not a candidate
    out, rec = replace_items(small_log, [5], np.random.default_rng(0), strategy=strategy)
    assert rec.replaced == ((5, 0, new),)
    assert out.item.tolist() == [0, 1, 1, 2, 2, new, 3]
    assert rec.params["strategy"] == strategy


def test_replace_excludes_old_and_neighbour_items(small_log):
    # row 2 (user 0, item 1) sits between user 0's items 0 and 2: only item 3 is left
    for seed in range(5):
        _, rec = replace_items(small_log, [2], np.random.default_rng(seed), strategy="random")
        assert rec.replaced == ((2, 1, 3),)


def test_replace_random_is_uniform_over_candidates(small_log):
    picks = {replace_items(small_log, [5], np.random.default_rng(s))[1].replaced[0][2]
             for s in range(40)}
    assert picks == {2, 3}


def test_insert_midpoint_and_placement(small_log):
    # after row 1 (user 1, t=10); user 1's next is row 5 (t=50): t_new = 30, placed before
    # original row 3 (the first row with t >= 30); excluded items 1 and 0 -> popular = item 2
    out, rec = insert_after(small_log, [1], np.random.default_rng(0), strategy="popular")
    assert rec.inserted == ((3, 1, 2, 30, None),)
    assert rows_of(out) == [(0, 0, 10), (1, 1, 10), (0, 1, 20), (1, 2, 30), (2, 2, 30),
                            (0, 2, 40), (1, 0, 50), (2, 3, 60)]


def test_insert_after_last_interaction_keeps_its_time(small_log):
    # row 6 is user 2's last: t_new = 60, appended; only item 3 excluded; unpopular among
    # i0, i1, i2 (2 each) -> the lowest code, 0
    out, rec = insert_after(small_log, [6], np.random.default_rng(0), strategy="unpopular")
    assert rec.inserted == ((7, 2, 0, 60, None),)
    assert rows_of(out)[-1] == (2, 0, 60)


def test_insert_between_equal_times_stays_between():
    log = Interactions.from_codes([0, 1, 0], [0, 1, 2], [5, 5, 5], n_items=4)
    out, rec = insert_after(log, [0], np.random.default_rng(0), strategy="popular")
    # t_new = 5 and it goes right after row 0, before user 0's next interaction (row 2)
    assert rec.inserted[0][:2] == (1, 0) and rec.inserted[0][3] == 5
    assert out.user.tolist() == [0, 0, 1, 0]


def test_insert_float_times_and_ratings():
    log = Interactions.from_codes([0, 0, 1], [0, 1, 2], [1.0, 2.0, 1.5], [4.0, 2.0, 3.0])
    out, rec = insert_after(log, [0], np.random.default_rng(0), strategy="popular")
    # rows sorted: (0,0,1.0,r4) (1,2,1.5,r3) (0,1,2.0,r2); t_new = 1.5, placed before row 1
    assert rec.inserted == ((1, 0, 2, 1.5, 4.0),)
    assert out.timestamp.tolist() == [1.0, 1.5, 1.5, 2.0]
    assert out.rating.tolist() == [4.0, 4.0, 3.0, 2.0]


def test_insert_several_at_one_place_sorted(small_log):
    out, rec = insert_after(small_log, [0, 1], np.random.default_rng(0), strategy="popular")
    assert np.all(np.diff(out.timestamp) >= 0)
    assert len(out) == 9 and rec.apply(small_log).fingerprint() == out.fingerprint()


def test_edit_errors(small_log):
    with pytest.raises(ValueError, match="distinct"):
        delete_rows(small_log, [1, 1])
    with pytest.raises(ValueError, match="outside"):
        delete_rows(small_log, [7])
    with pytest.raises(ValueError, match="strategy"):
        replace_items(small_log, [0], np.random.default_rng(0), strategy="rare")
    one_item = Interactions.from_codes([0, 0], [0, 0], [1, 2])
    with pytest.raises(DataError, match="no item left"):
        replace_items(one_item, [0], np.random.default_rng(0))
