"""Heuristics (Shriver 2018 Tables 4.2, 4.4): promised type, users/items, test data untouched."""

from __future__ import annotations

import numpy as np
import pytest

from recaudit.errors import ConfigError
from recaudit.fuzz import KIND_OF, FuzzSpec, pair_keys

ALL = ("ZERO", "ARAND", "RRAND", "CBRAND", "CTRAND", "AMU", "RMU", "CMU", "ALI", "AMR", "AMA",
       "APORTFOLIO")


def _apply(spec, log, recs, seed=0, protected=None):
    return FuzzSpec.parse(spec).apply(log, np.random.default_rng(seed), recommendations=recs,
                                      protected=protected)


def _pairs(rec):
    return list(zip(rec.user, rec.item, strict=True))


def test_amu_adds_random_items_to_the_most_influential_user(small_log, small_recs):
    # I^U = [2, 2, 1, 1]: u0 or u1 (tie, random); u0 can take items {2,3,4}, u1 {0,3,4}
    seen_users = set()
    for seed in range(12):
        _, rec = _apply("fuzz:AMU:3", small_log, small_recs, seed)
        assert set(rec.kind) == {"add"} and len(set(rec.user)) == 1
        u = rec.user[0]
        seen_users.add(u)
        assert sorted(rec.item) == {0: [2, 3, 4], 1: [0, 3, 4]}[u]
        assert all(v in (1, 2, 3, 4, 5) for v in rec.value)
        assert rec.info["influence"] == [2]
    assert seen_users == {0, 1}  # ties are broken at random, both happen


def test_amu_respects_protected_pairs_and_falls_through(small_log, small_recs):
    n = small_log.n_items
    protected = pair_keys([1, 1, 1, 1, 1, 0, 0], [0, 1, 2, 3, 4, 2, 3], n)
    for seed in range(5):
        _, rec = _apply("fuzz:AMU:1", small_log, small_recs, seed, protected)
        assert _pairs(rec) == [(0, 4)]
    # four adds: u0/u1 have at most 3 free items -> continue with the next user in order
    _, rec = _apply("fuzz:AMU:4", small_log, small_recs, 0)
    assert len(rec.info["chosen"]) == 2 and rec.info["chosen"][0] in (0, 1)


def test_rmu_and_cmu_edit_the_most_influential_users_ratings(small_log, small_recs):
    ratings = {(0, 0): 5.0, (0, 1): 3.0, (1, 1): 4.0, (1, 2): 2.0}
    _, rec = _apply("fuzz:RMU:2", small_log, small_recs, 1)
    assert set(rec.kind) == {"remove"} and len(set(rec.user)) == 1 and rec.user[0] in (0, 1)
    assert all(p in ratings for p in _pairs(rec))
    _, rec = _apply("fuzz:CMU:2", small_log, small_recs, 2)
    assert set(rec.kind) == {"change"} and rec.value == [1.0, 1.0]
    assert all(p in ratings for p in _pairs(rec)) and len(set(rec.user)) == 1
    # three removals: all of one top user's two ratings, then one of the other's
    _, rec = _apply("fuzz:RMU:3", small_log, small_recs, 3)
    assert sorted(set(rec.user)) == [0, 1] and len(set(_pairs(rec))) == 3


def test_ali_adds_to_the_least_influential_item(small_log, small_recs):
    # I^I = [2, 2, 1, 1, 0]: item 4 first; its raters (u0, u1, u2) all have recommendations,
    # so it rises to 1 and ties with items 2 and 3: the next two go to those three
    for seed in range(8):
        _, rec = _apply("fuzz:ALI:3", small_log, small_recs, seed)
        assert set(rec.kind) == {"add"} and rec.item[0] == 4 and set(rec.item) <= {2, 3, 4}
        assert rec.info["chosen"][0] == 4 and rec.info["influence"][0] == 0
        _check_ali_levels(small_log, small_recs, rec)


def _check_ali_levels(log, recs, rec):
    """Independent replay: every modification went to an item of the lowest current I^I
    among the items some user could still rate."""
    from recaudit.fuzz import item_influence

    level = item_influence(log, recs).astype(int)
    has_rec = {int(u) for u, row in zip(recs.users, recs.items, strict=True) if (row >= 0).any()}
    rated = set(zip(log.user.tolist(), log.item.tolist(), strict=True))
    for u, i in _pairs(rec):
        open_items = [j for j in range(log.n_items)
                      if any((v, j) not in rated for v in range(log.n_users))]
        assert level[i] == min(level[j] for j in open_items), (u, i, level)
        rated.add((u, i))
        level[i] += u in has_rec


def test_ali_spreads_over_items_tied_at_the_lowest_influence(fz):
    # a set of M ratings reaches M different items while M items tie at the lowest I^I; the
    # thesis' ALI instability grows ~linearly with M (Table 4.6), which needs exactly that
    from recaudit.fuzz import item_influence

    log = fz.random_log(3, n_users=30, n_items=80, n=150)
    recs = fz.popularity_recs(log, k=5)
    infl = item_influence(log, recs)
    tied = int((infl == infl.min()).sum())
    assert tied >= 3
    _, rec = _apply(f"fuzz:ALI:{tied}", log, recs, 5)
    assert len(set(rec.item)) == tied and all(infl[i] == infl.min() for i in rec.item)
    _, rec = _apply(f"fuzz:ALI:{tied + 4}", log, recs, 6)
    _check_ali_levels(log, recs, rec)


def test_amr_adds_to_items_near_the_most_influential_rating(small_log, small_recs):
    # I^R = [0, 1, 2, 0, 1] over 1..5: rating 3; items with mean 3 +- 0.05: i0 (3.0), i4 (3.0)
    for seed in range(6):
        _, rec = _apply("fuzz:AMR:3", small_log, small_recs, seed)
        assert set(rec.kind) == {"add"} and set(rec.item) <= {0, 4}
        assert rec.info["rating"] == 3.0
        assert all(v in (1, 2, 3, 4, 5) for v in rec.value)


def test_ama_adds_low_ratings_to_the_top_attribute_item(small_log, small_recs):
    # summed eq. 4.9 scores [4, 2, 4, 6, -2]: item 3; users without it: 0, 1, 3
    _, rec = _apply("fuzz:AMA:2", small_log, small_recs, 0)
    assert set(rec.item) == {3} and set(rec.user) <= {0, 1, 3} and rec.value == [1.0, 1.0]


def test_random_baselines(small_log):
    rated = {(0, 0): 5.0, (0, 1): 3.0, (1, 1): 4.0, (1, 2): 2.0, (2, 0): 1.0, (2, 3): 5.0,
             (3, 4): 3.0}
    _, rec = _apply("fuzz:ARAND:5", small_log, None, 0)
    assert set(rec.kind) == {"add"} and not set(_pairs(rec)) & set(rated)
    _, rec = _apply("fuzz:RRAND:7", small_log, None, 0)
    assert set(_pairs(rec)) == set(rated)
    _, rec = _apply("fuzz:CBRAND:6", small_log, None, 0)  # (2, 0) is already at the low value
    assert set(_pairs(rec)) == set(rated) - {(2, 0)} and set(rec.value) == {1.0}
    _, rec = _apply("fuzz:CTRAND:5", small_log, None, 0)
    assert set(_pairs(rec)) == set(rated) - {(0, 0), (2, 3)} and set(rec.value) == {5.0}
    with pytest.raises(ValueError, match="only 5 ratings"):
        _apply("fuzz:CTRAND:6", small_log, None, 0)
    new, rec = _apply("fuzz:ZERO:10", small_log, None, 0)
    assert len(rec) == 0 and new.fingerprint() == small_log.fingerprint()


@pytest.mark.parametrize("name", ALL)
def test_promised_type_and_test_data_untouched(name, fz):
    log = fz.random_log(11)
    recs = fz.popularity_recs(log)
    rng = np.random.default_rng(0)
    rated = set(zip(log.user.tolist(), log.item.tolist()))
    unrated = [(u, i) for u in range(log.n_users) for i in range(log.n_items)
               if (u, i) not in rated]
    # the "test data": a third of the unrated pairs
    test = [unrated[j] for j in rng.choice(len(unrated), len(unrated) // 3, replace=False)]
    protected = pair_keys(*np.array(test).T, log.n_items)
    for size in (1, 10, 25):
        new, rec = _apply(f"fuzz:{name}:{size}", log, recs, size, protected)
        assert len(rec) == (0 if name == "ZERO" else size)
        kind = KIND_OF[name]
        if name != "ZERO":
            assert set(rec.kind) == {kind}
        pairs = _pairs(rec)
        assert len(set(pairs)) == len(pairs)
        for (u, i), k in zip(pairs, rec.kind, strict=True):
            assert ((u, i) in rated) == (k != "add")
        assert not set(pairs) & set(test)
        assert rec.apply(log).fingerprint() == new.fingerprint()


@pytest.mark.parametrize("name", ALL)
def test_seeded_repeatability(name, fz):
    log = fz.random_log(2)
    recs = fz.popularity_recs(log)
    a = _apply(f"fuzz:{name}:10", log, recs, 42)[1]
    b = _apply(f"fuzz:{name}:10", log, recs, 42)[1]
    assert a.to_dict() == b.to_dict()
    if name != "ZERO":
        c = _apply(f"fuzz:{name}:10", log, recs, 43)[1]
        assert (c.user, c.item, c.value) != (a.user, a.item, a.value)


def test_portfolio_round_robin(fz):
    log = fz.random_log(4)
    recs = fz.popularity_recs(log)
    spec = FuzzSpec("APORTFOLIO", 7, {"portfolio": ["AMA", "RMU", "CMU"]})
    _, rec = spec.apply(log, np.random.default_rng(0), recommendations=recs)
    assert rec.kind == ["add", "remove", "change"] * 2 + ["add"]
    assert spec.kind == "mixed" and rec.info["members"] == ["AMA", "RMU", "CMU"]
    # the member heuristics' own choices: AMA adds low values to one item, CMU to low
    adds = [j for j in range(7) if rec.kind[j] == "add"]
    assert len({rec.item[j] for j in adds}) == 1 and {rec.value[j] for j in adds} == {0.5}
    assert FuzzSpec("APORTFOLIO", 4).members == ("AMU", "ALI", "AMR", "AMA")


def test_spec_names_round_trip_and_validation():
    for spec in (FuzzSpec("amr", 10), FuzzSpec("AMR", 1, {"epsilon": 0.1}),
                 FuzzSpec("APORTFOLIO", 100, {"portfolio": "AMU+AMR", "scale": [1, 2, 3]})):
        assert FuzzSpec.parse(spec.name) == spec
    assert FuzzSpec("amr", 10).name == "fuzz:AMR:10"
    assert FuzzSpec.parse("fuzz:APORTFOLIO:10:portfolio=AMU+AMR").members == ("AMU", "AMR")
    with pytest.raises(ConfigError, match="unknown fuzzing heuristic"):
        FuzzSpec("XYZ", 1)
    with pytest.raises(ConfigError, match="unknown fuzz parameter"):
        FuzzSpec("AMR", 1, {"eps": 1})
    with pytest.raises(ConfigError, match=">= 0"):
        FuzzSpec("AMR", -1)
    with pytest.raises(ConfigError, match="fuzz:<HEURISTIC>"):
        FuzzSpec.parse("AMR")
    with pytest.raises(ConfigError, match="APORTFOLIO only"):
        FuzzSpec("AMR", 1, {"portfolio": "AMU"})
    with pytest.raises(ConfigError, match=r"'\+inputs' does not apply to fuzzing"):
        FuzzSpec.parse("fuzz:AMR:10+inputs")


def test_influence_guided_needs_recommendations(small_log):
    assert FuzzSpec("AMR", 1).needs_recommendations
    assert not FuzzSpec("ARAND", 1).needs_recommendations
    with pytest.raises(ConfigError, match="recommendations"):
        FuzzSpec("AMU", 1).apply(small_log, np.random.default_rng(0))


def test_protocol_context_protects_the_test_split(fz):
    """As an audit perturbation: the first query of each user gives their list (cut to k),
    the split's held-out pairs are never added, and ``perturb`` equals ``apply`` with those
    inputs built by hand."""
    from recaudit.data import RankLists, split
    from recaudit.fuzz import Recommendations
    from recaudit.perturb import Context

    log = fz.random_log(9)
    sp = split(log, "leave-last-out")
    base = fz.popularity_recs(sp.train, k=5)
    per_query = base.items[sp.queries.user]  # one row per test query
    test_pairs = set(zip(sp.test.user.tolist(), sp.test.item.tolist()))
    protected = sp.held_out_pairs()
    assert set(protected.tolist()) == {u * log.n_items + i for u, i in test_pairs}
    ctx = Context(queries=sp.queries, baseline=RankLists(per_query), k=3, protected=protected)
    users = np.unique(sp.queries.user)
    by_hand = Recommendations(users, base.items[users, :3])
    for name in ("ARAND", "AMU", "ALI", "AMR", "AMA"):
        spec = FuzzSpec(name, 25)
        assert spec.needs.protected and spec.needs.recommendations == (name != "ARAND")
        out, rec = spec.perturb(sp.train, np.random.default_rng(1), ctx)
        assert not set(zip(rec.user, rec.item)) & test_pairs
        again, rec2 = spec.apply(sp.train, np.random.default_rng(1), recommendations=by_hand,
                                 protected=protected)
        assert rec2.to_dict() == rec.to_dict() and again.fingerprint() == out.fingerprint()
