"""Hypothesis properties of the edits and records."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from recaudit.data import Interactions
from recaudit.perturb import PerturbationRecord, delete_rows, insert_after, replace_items


@st.composite
def logs(draw):
    n = draw(st.integers(2, 40))
    users = draw(st.lists(st.integers(0, 4), min_size=n, max_size=n))
    items = draw(st.lists(st.integers(0, 6), min_size=n, max_size=n))
    times = draw(st.lists(st.integers(0, 8), min_size=n, max_size=n))
    log = Interactions.from_codes(users, items, times, n_users=5, n_items=7)
    k = draw(st.integers(1, n))
    seed = draw(st.integers(0, 2**32))
    rows = np.random.default_rng(seed).choice(n, size=k, replace=False)
    return log, rows, seed


def enough_items(log):
    return len(np.unique(log.item)) >= 4  # room for a new item beside 3 exclusions


@settings(max_examples=60, deadline=None)
@given(logs())
def test_delete_then_count(case):
    log, rows, _ = case
    out, rec = delete_rows(log, rows)
    assert len(out) == len(log) - len(rows)
    assert np.array_equal(out.item_counts(), log.item_counts()
                          - np.bincount(log.item[rows], minlength=log.n_items))
    assert PerturbationRecord.from_dict(rec.to_dict()).apply(log).fingerprint() \
        == out.fingerprint()


@settings(max_examples=60, deadline=None)
@given(logs(), st.sampled_from(["random", "popular", "unpopular"]))
def test_insert_keeps_sorted_and_places_between(case, strategy):
    log, rows, seed = case
    if not enough_items(log):
        return
    out, rec = insert_after(log, rows, np.random.default_rng(seed), strategy=strategy)
    assert len(out) == len(log) + len(rows)
    assert np.all(np.diff(out.timestamp) >= 0)
    assert PerturbationRecord.from_json(rec.to_json()).apply(log).fingerprint() \
        == out.fingerprint()
    # each new interaction's user sequence: it follows the selected row and precedes the next
    kept_order = np.insert(np.arange(len(log)), [x[0] for x in rec.inserted], -1)
    for r in rows.tolist():
        pos = np.flatnonzero(kept_order == r)[0]
        same_user_after = [p for p in range(pos + 1, len(out)) if out.user[p] == log.user[r]]
        assert same_user_after and kept_order[same_user_after[0]] == -1


@settings(max_examples=60, deadline=None)
@given(logs(), st.sampled_from(["random", "popular", "unpopular"]))
def test_replace_keeps_size_and_changes_only_items(case, strategy):
    log, rows, seed = case
    if not enough_items(log):
        return
    out, rec = replace_items(log, rows, np.random.default_rng(seed), strategy=strategy)
    assert len(out) == len(log)
    assert np.array_equal(out.user, log.user) and np.array_equal(out.timestamp, log.timestamp)
    changed = np.flatnonzero(out.item != log.item)
    assert sorted(changed.tolist()) == sorted(rows.tolist())
    assert all(log.item_counts()[new] > 0 for _, _, new in rec.replaced)
    assert PerturbationRecord.from_dict(rec.to_dict()).apply(log).fingerprint() \
        == out.fingerprint()
