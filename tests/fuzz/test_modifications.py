"""Add / remove / change modifications, atomic sets and records (Shriver 2018 §4.1.2)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from recaudit.data import Interactions
from recaudit.fuzz import ADD, CHANGE, REMOVE, FuzzRecord, ModificationSet, apply_modifications


def _pairs(log: Interactions) -> dict[tuple[int, int], float]:
    return {(int(u), int(i)): float(r) for u, i, r in zip(log.user, log.item, log.rating,
                                                          strict=True)}


def test_add_remove_change_by_hand(small_log):
    mods = ModificationSet.concat([ModificationSet.of(ADD, [0], [4], 2.5),
                                   ModificationSet.of(REMOVE, [1], [2]),
                                   ModificationSet.of(CHANGE, [2], [3], 1.0)])
    new, rec = apply_modifications(small_log, mods, heuristic="hand")
    expected = _pairs(small_log)
    expected[(0, 4)] = 2.5
    del expected[(1, 2)]
    expected[(2, 3)] = 1.0
    assert _pairs(new) == expected
    assert (new.n_users, new.n_items) == (4, 5) and len(new) == len(small_log)
    assert rec.kind == ["add", "remove", "change"]
    assert rec.old_value == [None, 2.0, 5.0]
    assert rec.value == [2.5, None, 1.0]
    assert rec.rows == [[], [3], [5]]
    # the added rating gets user 0's latest timestamp (11) and follows its rows
    assert rec.timestamp == [11, None, None]
    rows0 = np.flatnonzero(new.user == 0)
    assert new.item[rows0].tolist() == [0, 1, 4] and new.timestamp[rows0].tolist() == [10, 11, 11]
    # attributes and the code space are untouched
    assert dict(new.item_attributes) == dict(small_log.item_attributes)


def test_record_round_trips_through_json_and_reapplies(small_log):
    mods = ModificationSet.of(ADD, [3, 3], [0, 1], [0.5, 5.0])
    new, rec = apply_modifications(small_log, mods, info={"why": [1, 2]})
    back = FuzzRecord.from_dict(json.loads(json.dumps(rec.to_dict())))
    assert back == rec
    again = back.apply(small_log)
    assert again.fingerprint() == new.fingerprint() == rec.fingerprint_after
    other = small_log.replace(rating=np.asarray(small_log.rating) + 0.5)
    with pytest.raises(ValueError, match="another log"):
        back.apply(other)


def test_repeated_pairs_rule():
    # user 0 rated item 1 twice: remove deletes both rows, change sets both
    log = Interactions.from_codes([0, 0, 1, 0], [1, 2, 1, 1], timestamp=[1, 2, 3, 4],
                                  rating=[2.0, 3.0, 4.0, 5.0])
    removed, rec = apply_modifications(log, ModificationSet.of(REMOVE, [0], [1]))
    assert sorted(zip(removed.user.tolist(), removed.item.tolist())) == [(0, 2), (1, 1)]
    assert rec.rows == [[0, 3]] and rec.old_value == [5.0]  # latest value
    changed, _ = apply_modifications(log, ModificationSet.of(CHANGE, [0], [1], 1.0))
    assert changed.rating[(changed.user == 0) & (changed.item == 1)].tolist() == [1.0, 1.0]


@pytest.mark.parametrize("mods, message", [
    (ModificationSet.of(ADD, [0], [0], 3.0), "already rated"),
    (ModificationSet.of(REMOVE, [0], [4]), "has not rated"),
    (ModificationSet.of(CHANGE, [3], [0], 1.0), "has not rated"),
    (ModificationSet.of(ADD, [0, 0], [4, 4], 3.0), "more than once"),
    (ModificationSet.of(ADD, [0], [4], np.nan), "NaN"),
    (ModificationSet.of(ADD, [9], [0], 1.0), "code space"),
])
def test_invalid_sets_fail_before_any_change(small_log, mods, message):
    with pytest.raises(ValueError, match=message):
        apply_modifications(small_log, mods)


def test_atomic_set_with_mixed_valid_and_invalid(small_log):
    # the valid first modification must not leak out when the second is invalid
    bad = ModificationSet.concat([ModificationSet.of(REMOVE, [0], [0]),
                                  ModificationSet.of(REMOVE, [3], [0])])
    before = small_log.fingerprint()
    with pytest.raises(ValueError, match="modification 1"):
        apply_modifications(small_log, bad)
    assert small_log.fingerprint() == before


def test_unknown_kind_and_lengths():
    with pytest.raises(ValueError, match="unknown modification kind"):
        ModificationSet(("insert",), [0], [0], [1.0])
    with pytest.raises(ValueError, match="differ in length"):
        ModificationSet(("add", "add"), [0], [0], [1.0])


def test_empty_set_is_identity(small_log):
    new, rec = apply_modifications(small_log, ModificationSet.empty())
    assert new.fingerprint() == small_log.fingerprint() and len(rec) == 0
