"""`recaudit.audit.changes` and `most_changed` against `query_results`, the perturbation records
and the interaction graph walked by hand."""

from __future__ import annotations

import json
from collections import deque

import numpy as np
import pytest

from recaudit.audit import changes, most_changed
from recaudit.errors import ConfigError, DataError


def _reach(train, start: int) -> set[int]:
    """Rows reachable from ``start`` in the IDAG (Oh et al. 2022 §6.2): consecutive rows of a
    user, and of an item, joined where the timestamp strictly increases."""
    nxt: dict[int, list[int]] = {}
    for col in ("user", "item"):
        for _, g in train.groupby(col, sort=False):
            idx = g.index.to_numpy()
            for a, b in zip(idx[:-1], idx[1:], strict=True):
                if train.timestamp[b] > train.timestamp[a]:
                    nxt.setdefault(a, []).append(b)
    seen, todo = {start}, deque([start])
    while todo:
        for b in nxt.get(todo.popleft(), ()):
            if b not in seen:
                seen.add(b)
                todo.append(b)
    return seen


def _trial(audit, perturbation: str, seed: int = 0) -> str:
    rows = audit.rows
    return rows[(rows.perturbation == perturbation) & (rows.seed == seed)].trial_id.iloc[0]


def test_lists_entered_left_and_moves_are_the_stored_ones(who_audit):
    ids = who_audit.user_of_code()
    code = int(who_audit.rows.user.value_counts().index[0])   # a user with several queries
    user = ids[code]
    found = changes(who_audit.store, user)
    rows = who_audit.rows[(who_audit.rows.user == code) & (who_audit.rows.seed == 0)]
    assert len(found) == len(rows) == 3 * rows["query"].nunique()   # every perturbation
    for c in found:
        r = rows[(rows.trial_id == c.trial_id) & (rows["query"] == c.query)].iloc[0]
        base, pert = json.loads(r.top_base), json.loads(r.top_pert)
        assert (c.user, c.seed, c.draw, c.perturbation) == (user, 0, 0, r.perturbation)
        assert list(c.baseline) == base and list(c.perturbed) == pert
        assert all(isinstance(i, str) and i.startswith("film-") for i in base)
        assert list(c.entered) == [i for i in pert if i not in base]
        assert list(c.left) == [i for i in base if i not in pert]
        assert {i: (a, b) for i, a, b in c.moves} == {
            i: (base.index(i) + 1, pert.index(i) + 1) for i in base if i in pert}
        assert (c.rbo, c.jaccard) == (r.rbo, r.jaccard)
        d = c.to_dict()
        assert {"user", "perturbation", "seed", "baseline", "perturbed", "entered",
                "left"} <= set(d)
        json.dumps(d)  # plain values only


def test_casper_edit_touches_a_user_outside_the_test_set(who_audit):
    ids = who_audit.user_of_code()
    queried = {ids[c] for c in who_audit.rows.user}
    tid = _trial(who_audit, "casper-delete")
    record = who_audit.records[tid]
    (row,) = record["deleted"]
    (gone,) = record["in_your_ids"]["deleted"]
    train = who_audit.train
    assert train.loc[row, ["user", "item", "timestamp"]].tolist() == \
        [gone["user"], gone["item"], gone["timestamp"]]
    assert gone["user"] not in queried            # the edited user has no test query
    with pytest.raises(DataError, match="no test query"):
        changes(who_audit.store, gone["user"])

    reach = _reach(train, row)
    assert len(reach) == record["scores"][0]      # CASPER's score: its descendants
    user = sorted(queried)[3]
    (c, *_) = changes(who_audit.store, user, perturbation="casper-delete", seed=1)
    assert c.seed == 1
    e = c.edit
    assert e.kind == "delete" and not e.touches_user and e.count == 1
    assert e.interactions == ({"edit": "deleted", **gone},)
    assert e.descendants == len(reach)
    assert e.user_descendants == sum(train.user[r] == user for r in reach) > 0


def test_the_descendants_of_an_edit_are_counted_once_per_trial(who_audit, monkeypatch):
    """Every user of a trial shares its edit's descendants: the graph is built once, and
    each user's count is the one built for them alone."""
    import recaudit.perturb
    from recaudit.audit import _changes

    built = []
    real = recaudit.perturb.casper_descendants
    monkeypatch.setattr(recaudit.perturb, "casper_descendants",
                        lambda *a: built.append(a[1]) or real(*a))
    monkeypatch.setattr(_changes, "_REACH", {})
    ids = who_audit.user_of_code()
    users = sorted({ids[c] for c in who_audit.rows.user})[:4]
    first = [changes(who_audit.store, u, perturbation="casper-delete", seed=1)[0].edit
             for u in users]
    assert len(built) == 1
    monkeypatch.setattr(_changes, "_REACH", {})   # afresh for each user: the same counts
    again = []
    for u in users:
        _changes._REACH.clear()
        again.append(changes(who_audit.store, u, perturbation="casper-delete", seed=1)[0].edit)
    assert len(built) == 1 + len(users)
    assert [(e.descendants, e.user_descendants) for e in first] == \
        [(e.descendants, e.user_descendants) for e in again]


def test_replacement_names_the_new_item_and_its_user(who_audit):
    tid = _trial(who_audit, "random-replace-popular")
    record = who_audit.records[tid]
    (rep,) = record["in_your_ids"]["replaced"]
    ids = who_audit.user_of_code()
    queried = {ids[c] for c in who_audit.rows.user}
    if rep["user"] not in queried:
        pytest.skip("the drawn replacement hit a user without a test query")
    found = changes(who_audit.store, rep["user"], perturbation="random-replace-popular")
    e = found[0].edit
    assert e.kind == "replace" and e.touches_user
    assert e.interactions == ({"edit": "replaced", **rep},)
    assert e.descendants == len(_reach(who_audit.train, record["replaced"][0][0]))


def test_bad_users_perturbations_and_seeds(who_audit):
    with pytest.raises(DataError, match="no user 'u99'"):
        changes(who_audit.store, "u99")
    with pytest.raises(ConfigError, match="Did you mean 'casper-delete'"):
        changes(who_audit.store, "u20", perturbation="casper-delet")
    with pytest.raises(ConfigError, match="no seed 7"):
        changes(who_audit.store, "u20", seed=7)
    with pytest.raises(ConfigError, match="no draw 2"):
        changes(who_audit.store, "u20", draw=2)


def test_most_changed_users(who_audit):
    rows, ids = who_audit.rows, who_audit.user_of_code()
    out = most_changed(who_audit.store, 3)
    assert set(out.perturbation) == {"casper-delete", "random-replace-popular"}  # no floor
    for pert, g in out.groupby("perturbation"):
        mine = rows[rows.perturbation == pert]
        per_user = mine.groupby("user").agg(rbo=("rbo", "mean"), jaccard=("jaccard", "mean"),
                                            queries=("query", "nunique"))
        per_user = per_user.reset_index().sort_values(["rbo", "user"]).head(3)
        assert g.user.tolist() == [ids[c] for c in per_user.user]
        assert g.rbo.to_numpy() == pytest.approx(per_user.rbo.to_numpy())
        assert g.jaccard.to_numpy() == pytest.approx(per_user.jaccard.to_numpy())
        for r in g.itertuples():   # the list that moved most is the user's lowest RBO
            lowest = mine[mine.user.map(ids) == r.user].rbo.min()
            hit = mine[(mine.seed == r.seed) & (mine.draw == r.draw)
                       & (mine["query"] == r.query)]
            assert hit.rbo.iloc[0] == lowest and ids[int(hit.user.iloc[0])] == r.user
        act = who_audit.train.groupby("user").size()
        assert g.activity.tolist() == act[g.user].tolist()
    floor = most_changed(who_audit.store, 2, perturbation="seed-only", by=())
    assert floor.perturbation.tolist() == ["seed-only"] * 2
    with pytest.raises(ConfigError, match="n must be"):
        most_changed(who_audit.store, 0)


def test_integer_ids_are_found_from_text():
    from recaudit.audit._users import user_code
    from recaudit.data import Interactions

    data = Interactions.from_codes([0, 1, 2], [0, 0, 1], user_ids=np.array([10, 1042, 7]))
    assert user_code(data, "1042", "d") == 1 and user_code(data, 7, "d") == 2
    with pytest.raises(DataError, match="Did you mean '1042'"):
        user_code(data, "1043", "d")
