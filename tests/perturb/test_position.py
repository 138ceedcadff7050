"""Position removal (Betello et al. 2023 section 3.1) and seed-only, worked by hand."""

import numpy as np
import pytest

from recaudit.data import Interactions
from recaudit.perturb import remove_positions, seed_only

# user 0: items 0..6 at t = 0..6 (7 items); user 1: items 10, 11 (2 items); user 2: item 20
LOG = Interactions.from_codes([0] * 7 + [1, 1, 2], list(range(7)) + [10, 11, 20],
                              list(range(7)) + [0, 1, 0], n_items=21)


def kept(log, user):
    return log.item[log.user == user].tolist()


@pytest.mark.parametrize("where,u0,u1", [
    ("beginning", [3, 4, 5, 6], [11]),
    ("end", [0, 1, 2, 3], [10]),
    # middle: T=7, r=3, start (7-3)//2 = 2 -> positions 2,3,4; T=2: r=1, start 0
    ("middle", [0, 1, 5, 6], [11]),
])
def test_remove_three(where, u0, u1):
    out, rec = remove_positions(LOG, where, 3)
    assert kept(out, 0) == u0 and kept(out, 1) == u1 and kept(out, 2) == [20]
    assert rec.kind == "delete" and rec.users == (0, 1)
    assert rec.params["short_users"] == 2  # users 1 and 2 lost fewer than 3
    assert rec.apply(LOG).fingerprint() == out.fingerprint()


def test_middle_removes_n_not_n_minus_one():
    # the printed formula keeps I_1..I_floor((L-1-n)/2) and resumes at I_floor((L-1+n)/2):
    # with 7 training items (L-1 = 7) and n = 2 it removes only I_3 (one item); we remove two,
    # positions 2, 3 (start (7-2)//2 = 2), the extra kept item on the right
    out, _ = remove_positions(LOG, "middle", 2)
    assert kept(out, 0) == [0, 1, 4, 5, 6]


def test_min_keep():
    out, _ = remove_positions(LOG, "end", 10, min_keep=2)
    assert kept(out, 0) == [0, 1] and kept(out, 1) == [10, 11] and kept(out, 2) == [20]
    out, _ = remove_positions(LOG, "end", 10, min_keep=0)
    assert len(out) == 0


def test_bad_arguments():
    with pytest.raises(ValueError, match="where"):
        remove_positions(LOG, "centre", 1)
    with pytest.raises(ValueError, match="n must"):
        remove_positions(LOG, "end", 0)


def test_seed_only_changes_nothing():
    out, rec = seed_only(LOG)
    assert out is LOG and rec.kind == "seed-only" and not rec.changes_data
    assert rec.apply(LOG) is LOG and rec.params["reseed"] is True
    assert np.array_equal(out.item, LOG.item)
