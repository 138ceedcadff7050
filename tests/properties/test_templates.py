"""The 12 templates of Shriver 2018 on a tiny universe whose values are computed by hand."""

from __future__ import annotations

import numpy as np
import pytest

from recaudit.properties import (
    AGGREGATES,
    TEMPLATES,
    Template,
    Universe,
    instantiate,
    register_template,
)

# k = 3 rankings (-1 = no item):      lists              sets
RANKING = np.array([[0, 1, 2],     # (0,1,2)  shared     {0,1,2}
                    [0, 1, 2],     # (0,1,2)  shared     {0,1,2}
                    [1, 0, 2],     # (1,0,2)             {0,1,2}
                    [4, 3, -1]])   # (4,3)               {3,4}
# ratings (user, item, value): item means 0:4 1:2 2:3 3:- 4:1 5:5 ; counts 2 1 3 0 1 2
RATINGS = [(2, 0, 5), (3, 0, 3), (3, 1, 2), (1, 2, 4), (2, 2, 4), (3, 2, 1), (0, 4, 1),
           (0, 5, 5), (1, 5, 5)]
ATTRS = {0: {"Drama"}, 1: {"Drama", "Comedy"}, 2: {"Comedy"}, 3: {"Horror"}, 4: {"Drama"},
         5: {"IMAX"}}


@pytest.fixture
def uni() -> Universe:
    u, i, r = (np.array(c) for c in zip(*RATINGS, strict=True))
    return Universe(RANKING, 6, u, i, r.astype(float),
                    {k: frozenset(v) for k, v in ATTRS.items()})


# hand-computed statistic for (template, f) at k = 3
HAND = {
    # items per user: 3 3 3 2
    ("NRANKS", "min"): 2, ("NRANKS", "max"): 3, ("NRANKS", "median"): 3,
    ("NRANKS", "avg"): 2.75, ("NRANKS", "count"): 4,
    ("NRI", None): 5, ("NTRI", None): 3, ("NRLMU", None): 1, ("NRL", None): 3, ("NRS", None): 2,
    # users sharing each user's list: 2 2 1 1
    ("NUPRL", "min"): 1, ("NUPRL", "max"): 2, ("NUPRL", "median"): 1.5,
    ("NUPRL", "avg"): 1.5, ("NUPRL", "count"): 4,
    # users per item over all 6 items: 3 3 3 1 1 0
    ("NUIR", "min"): 0, ("NUIR", "max"): 3, ("NUIR", "median"): 2, ("NUIR", "avg"): 11 / 6,
    ("NUIR", "count"): 6,
    # average rating of recommended items 0..4 (item 3 has none): 4 2 3 1
    ("ARTK", "min"): 1, ("ARTK", "max"): 4, ("ARTK", "median"): 2.5, ("ARTK", "avg"): 2.5,
    ("ARTK", "count"): 4,
    # number of ratings of recommended items 0..4: 2 1 3 0 1
    ("NRTK", "min"): 0, ("NRTK", "max"): 3, ("NRTK", "median"): 1, ("NRTK", "avg"): 1.4,
    ("NRTK", "count"): 5,
}


def _params(name, f, rel=">="):
    t = TEMPLATES[name]
    return {"f": f, "rel": rel} if t.uses_f else {}


@pytest.mark.parametrize("key", sorted(HAND, key=str))
def test_hand_computed_values(uni, key):
    name, f = key
    for rel in ("<=", "=", ">=") if f else (None,):
        p = instantiate(name, uni, k=3, **_params(name, f, rel))
        assert p.value == pytest.approx(HAND[key])
        assert p.holds and p.solved == TEMPLATES[name].threshold


def _stricter(v: float, rel: str) -> list[float]:
    up, down = np.nextafter(v, np.inf), np.nextafter(v, -np.inf)
    return {">=": [up, v + 1], "<=": [down, v - 1], "=": [up, down]}[rel]


@pytest.mark.parametrize("name", [n for n, t in TEMPLATES.items() if t.kind == "threshold"])
def test_tightest_parameter_holds_and_stricter_fails(uni, name):
    t = TEMPLATES[name]
    fs = AGGREGATES if t.uses_f else (None,)
    rels = ("<=", "=", ">=") if t.uses_f else (t.fixed_rel,)
    for f in fs:
        for rel in rels:
            params = {"f": f, "rel": rel} if t.uses_f else {}
            solved = instantiate(name, uni, k=3, **params)
            v = solved.value
            assert instantiate(name, uni, k=3, **params, **{t.threshold: v}).holds
            for stricter in _stricter(v, rel):
                assert not instantiate(name, uni, k=3, **params,
                                       **{t.threshold: stricter}).holds, (name, f, rel, stricter)
            if rel != "=":   # weaker values keep holding
                weaker = v - 1 if rel == ">=" else v + 1
                assert instantiate(name, uni, k=3, **params, **{t.threshold: weaker}).holds


def test_smaller_k(uni):
    assert instantiate("NRANKS", uni, k=1, f="min", rel=">=").value == 1
    assert instantiate("NRI", uni, k=1).value == 3          # items 0, 1, 4
    assert instantiate("NRL", uni, k=2).value == 3          # (0,1) (1,0) (4,3)
    assert instantiate("NRS", uni, k=2).value == 2          # {0,1} {3,4}


def test_ianr(uni):
    p = instantiate("IANR", uni, k=3)
    assert p.value == frozenset({"IMAX"}) and p.solved == "a"
    assert instantiate("IANR", uni, k=3, a="IMAX").holds
    assert not instantiate("IANR", uni, k=3, a="Horror").holds
    # at k = 1 item 3 (Horror) is not ranked any more
    assert instantiate("IANR", uni, k=1).value == frozenset({"Horror", "IMAX"})
    assert p.sentence == "IMAX items are never recommended in any top 3 ranked list."


def test_ianrlcmp(uni):
    p = instantiate("IANRLCMP", uni, k=3)
    assert p.value == ("Drama", "Comedy", "Horror", "IMAX")     # 3 2 1 0 recommended items
    assert instantiate("IANRLCMP", uni, k=3, a1="Drama", a2="Comedy").holds
    assert not instantiate("IANRLCMP", uni, k=3, a1="Comedy", a2="Drama").holds
    # strict ">": equal counts do not hold (at k = 1: Comedy 1 (item 1), Horror 0, IMAX 0)
    assert not instantiate("IANRLCMP", uni, k=1, a1="Horror", a2="IMAX").holds
    assert (instantiate("IANRLCMP", uni, k=3, a1="Drama", a2="IMAX").sentence
            == "Drama items are recommended in the top 3 more often than IMAX items.")


def test_sentences_of_the_tables():
    full = np.tile(np.arange(10), (3, 1))
    u = Universe(full, 12, np.array([0]), np.array([0]), np.array([4.0]), item_noun="movies")
    p = instantiate("NRANKS", u, k=10, f="min", rel=">=")
    assert p.sentence == ("The minimum number of movies ranked in the top 10 for any user is "
                          "greater than or equal to 10.")
    assert instantiate("NRI", u, k=10).sentence == (
        "There are at least 10 movies in at least one top 10 ranking.")
    assert instantiate("NRLMU", u, k=10).sentence == (
        "No more than 1 top 10 ranked lists are common to more than 1 user.")
    assert instantiate("NUPRL", u, k=10, f="max", rel="<=").sentence == (
        "The maximum number of users to which a top 10 ranked list is recommended is less "
        "than or equal to 3.")
    assert instantiate("ARTK", u, k=10, f="min", rel="<=", r=1.75).sentence == (
        "The minimum average rating for a movie in the top 10 is less than or equal to 1.75.")
    assert instantiate("NRTK", u, k=10, f="median", rel="=").sentence == (
        "The median number of ratings for a movie in the top 10 is equal to 0.")


def test_every_instantiation_renders_its_value(uni):
    for name, t in TEMPLATES.items():
        params = {"f": "max", "rel": ">="} if t.uses_f else {}
        p = instantiate(name, uni, k=3, **params)
        assert p.sentence.endswith(".") and str(p) == p.sentence
        if t.kind == "threshold":
            shown = f"{p.value:.6g}"
            assert shown in p.sentence


def test_user_defined_template(uni):
    """A template written with the query API: users whose top item has >= 2 ratings."""

    def stat(u: Universe, k: int) -> float:
        top = u.ranks(1).where(lambda r: u.item_rating_count[r.item] >= 2)
        return len(top.users())

    t = register_template(Template(
        "NUPOPTOP", "Novelty", "Number of Users with a popular top item", "threshold", stat,
        lambda p, noun: f"At least {p['n']:g} users get a top {noun[:-1]} rated twice or more.",
        fixed_rel=">=", params=("k", "n")))
    try:
        p = instantiate("NUPOPTOP", uni, k=1)
        assert p.value == 2                       # users 0, 1 (item 0: 2 ratings); 2, 3 not
        assert p.sentence == "At least 2 users get a top item rated twice or more."
        assert not instantiate(t, uni, k=1, n=3).holds
    finally:
        TEMPLATES.pop("NUPOPTOP")


def test_query_api_building_blocks(uni):
    r = uni.ranks(3)
    assert len(r) == 11
    assert r.count_per_user().values.tolist() == [3, 3, 3, 2]
    assert r.items().with_attribute("Drama").codes.tolist() == [0, 1, 4]
    assert r.lists(ordered=False).sizes.tolist() == [3, 1]
    assert uni.ranks(1).lists().n == 3          # (0) x2, (1), (4)
    assert np.isnan(uni.items().rating_mean().values[3])


def test_empty_lists_count_as_one_list():
    ranking = np.array([[2, 1], [-1, -1], [-1, -1]])
    u = Universe(ranking, 3, np.array([0]), np.array([1]), np.array([3.0]))
    assert instantiate("NRL", u, k=2).value == 2            # (2,1) and the empty list
    assert instantiate("NRLMU", u, k=2).value == 1
    assert instantiate("NRANKS", u, k=2, f="min", rel=">=").value == 0
    # ARTK over recommended items with ratings: item 1 only; item 2 has none
    assert instantiate("ARTK", u, k=2, f="min", rel="<=").value == 3.0


def test_undefined_aggregate_never_holds():
    u = Universe(np.array([[0]]), 2, np.array([0]), np.array([1]), np.array([3.0]))
    p = instantiate("ARTK", u, k=1, f="min", rel="<=")   # item 0 has no rating
    assert np.isnan(p.value) and not p.holds
    assert "undefined" in p.sentence


def test_errors(uni):
    with pytest.raises(ValueError, match="unknown template"):
        instantiate("NOPE", uni)
    with pytest.raises(ValueError, match="f must be"):
        instantiate("NRANKS", uni, k=3, f="mode", rel=">=")
    with pytest.raises(ValueError, match="rel must be"):
        instantiate("NRANKS", uni, k=3, f="min", rel="<")
    with pytest.raises(ValueError, match="k must be"):
        instantiate("NRI", uni, k=0)
    with pytest.raises(ValueError, match="exceeds the depth"):
        instantiate("NRI", uni, k=4)
    with pytest.raises(ValueError, match="has no parameter"):
        instantiate("NRI", uni, k=3, f="min")
    with pytest.raises(ValueError, match="Did you mean 'Drama'"):
        instantiate("IANR", uni, k=3, a="Dram")
    with pytest.raises(ValueError, match="both a1 and a2"):
        instantiate("IANRLCMP", uni, k=3, a1="Drama")
    with pytest.raises(ValueError, match="only after"):
        Universe(np.array([[-1, 2]]), 3, np.zeros(0, int), np.zeros(0, int), np.zeros(0))
    with pytest.raises(ValueError, match="twice"):
        Universe(np.array([[2, 2]]), 3, np.zeros(0, int), np.zeros(0, int), np.zeros(0))


def test_unicode_relations(uni):
    assert instantiate("NUIR", uni, k=3, f="max", rel="≥").params["rel"] == ">="
