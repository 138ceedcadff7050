"""The vectorised templates against a literal, set-based transcription of Tables 3.1-3.3 on
random universes (partial lists, unrated items, shared lists)."""

from __future__ import annotations

import statistics
from collections import Counter

import numpy as np
import pytest

from recaudit.properties import Universe, instantiate

F = {"min": min, "max": max, "median": statistics.median, "avg": statistics.fmean,
     "count": len}


def random_universe(seed: int) -> Universe:
    rng = np.random.default_rng(seed)
    n_users, n_items, depth = int(rng.integers(3, 30)), int(rng.integers(5, 25)), 4
    ranking = np.full((n_users, depth), -1, dtype=np.int32)
    for u in range(n_users):
        k_u = int(rng.integers(0, depth + 1))
        ranking[u, :k_u] = rng.choice(n_items, size=k_u, replace=False)
    dup = rng.random(n_users) < 0.3                       # shared lists
    ranking[dup] = ranking[rng.integers(0, n_users, size=int(dup.sum()))]
    n_r = int(rng.integers(0, 60))
    ru, ri = rng.integers(0, n_users, n_r), rng.integers(0, n_items, n_r)
    rv = rng.integers(1, 11, n_r) / 2.0
    labels = ["a", "b", "c", "d"]
    attrs = {i: frozenset(rng.choice(labels, size=int(rng.integers(0, 3)), replace=False)
                          .tolist()) for i in range(n_items)}
    return Universe(ranking, n_items, ru, ri, rv, attrs)


def reference(u: Universe, k: int) -> dict[tuple[str, str | None], float]:
    """Direct transcription of the formulas with Python sets (rank(i, u) = column + 1)."""
    rank = {(uu, int(i)): c + 1 for uu in range(u.n_users) for c, i in enumerate(u.ranking[uu])
            if i >= 0 and c < k}
    users, items = range(u.n_users), range(u.n_items)
    ranked = {i for (_, i) in rank}
    lists = [tuple(sorted((i, r) for (uu, i), r in rank.items() if uu == x)) for x in users]
    sets = [frozenset(i for (i, _) in lst) for lst in lists]
    ratings: dict[int, list[float]] = {}
    for _, i, v in zip(u.rating_user, u.rating_item, u.rating_value, strict=True):
        ratings.setdefault(int(i), []).append(float(v))
    lc = Counter(lists)
    out: dict[tuple[str, str | None], float] = {
        ("NRI", None): len(ranked),
        ("NTRI", None): len({i for (_, i), r in rank.items() if r == 1}),
        ("NRL", None): len(set(lists)),
        ("NRS", None): len(set(sets)),
        ("NRLMU", None): sum(1 for c in lc.values() if c > 1),
    }
    per = {"NRANKS": [sum(1 for i in items if (x, i) in rank) for x in users],
           "NUPRL": [lc[lists[x]] for x in users],
           "NUIR": [sum(1 for x in users if (x, i) in rank) for i in items],
           "ARTK": [statistics.fmean(ratings[i]) for i in ranked if i in ratings],
           "NRTK": [len(ratings.get(i, [])) for i in ranked]}
    for name, vals in per.items():
        for f, fn in F.items():
            out[(name, f)] = float(fn(vals)) if vals or f == "count" else float("nan")
    return out


@pytest.mark.parametrize("seed", range(25))
def test_templates_match_set_based_reference(seed):
    u = random_universe(seed)
    for k in (1, 2, 4):
        ref = reference(u, k)
        for (name, f), want in ref.items():
            params = {"f": f, "rel": ">="} if f else {}
            got = instantiate(name, u, k=k, **params).value
            if np.isnan(want):
                assert np.isnan(got), (seed, k, name, f)
            else:
                assert got == pytest.approx(want), (seed, k, name, f)


@pytest.mark.parametrize("seed", range(10))
def test_attribute_templates_match_reference(seed):
    u = random_universe(seed)
    k = 3
    ranked = {int(i) for i in u.ranking[:, :k].ravel() if i >= 0}
    attrs = u.item_attributes
    names = sorted({a for v in attrs.values() for a in v})
    counts = {a: sum(1 for i in ranked if a in attrs[i]) for a in names}
    never = {a for a in names if all(a not in attrs[i] for i in ranked)}
    assert instantiate("IANR", u, k=k).value == never
    order = instantiate("IANRLCMP", u, k=k).value
    assert [counts[a] for a in order] == sorted(counts.values(), reverse=True)
    for a1 in names:
        for a2 in names:
            assert instantiate("IANRLCMP", u, k=k, a1=a1, a2=a2).holds == (counts[a1] >
                                                                           counts[a2])
