"""The 12 property templates of Shriver 2018 (Tables 3.1-3.3), written with the query API.

A template is a formula over the universe with parameters: ``k`` (top-k), ``f`` (aggregate in
``min, median, max, count, avg``), ``rel`` (``∼`` in ``<=, =, >=``), attributes ``a, a1, a2``
and a threshold ``n`` or ``r``. :func:`instantiate` evaluates one:

- *partially instantiated* (threshold, or attribute(s), left out) -> the tightest remaining
  parameter for which the property holds, as the thesis' study computes it. For a threshold
  compared with ``rel`` against the statistic ``s``: ``>=`` holds for every ``n <= s`` and
  ``<=`` for every ``n >= s``, so the tightest is ``n = s`` in both cases (and ``=`` holds only
  at ``s``); any stricter value (``n > s`` for ``>=``, ``n < s`` for ``<=``, ``n != s`` for
  ``=``) makes it false. IANR without ``a`` gives the set of attributes never recommended;
  IANRLCMP without ``a1, a2`` gives the attribute order by number of recommended items.
- *fully instantiated* -> ``holds`` is True/False.

Every result renders the natural-language sentence of the tables' last column.

Choices where the thesis' formulas are ambiguous (documented and tested):

- sets are sets: NRL/NRS count *distinct* lists/sets over all users (a user without any ranked
  item contributes the empty list); NRLMU counts distinct lists received by more than one user;
  NUPRL aggregates, over users, the number of users sharing that user's list. Table 3.4
  confirms the NRLMU reading: for User-User, NRL = 132,390 lists for 138,493 users means the
  shared lists hold 6,103 more users than there are shared lists, impossible if NRLMU = 3,442
  counted users rather than lists;
- NUIR aggregates over *all* items (never-recommended items count 0), NRANKS over all users;
- ARTK and NRTK aggregate over recommended items; the average rating of an item without
  ratings is undefined and left out of ARTK, its number of ratings (0) is kept in NRTK;
- NTRI's and NRI's formulas say ``>= n``: the sentence reads "at least n" (Table 3.1's NTRI
  example drops the "at least");
- the NRL formula's ``rank(i, u) != k`` is read as ``!= ⊥`` (a typo in Table 3.2).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from recaudit.properties._universe import AGGREGATES, Universe

__all__ = ["RELATIONS", "TEMPLATES", "Property", "Template", "instantiate", "register_template"]

RELATIONS = {">=": ">=", "≥": ">=", "ge": ">=", "<=": "<=", "≤": "<=", "le": "<=", "=": "=",
             "==": "=", "eq": "="}
_REL_WORDS = {">=": "greater than or equal to", "<=": "less than or equal to", "=": "equal to"}
_F_WORDS = {"min": "minimum", "max": "maximum", "median": "median", "avg": "average",
            "count": "count of the"}


def _fmt(v: Any) -> str:
    if isinstance(v, (float, np.floating)):
        if np.isnan(v):
            return "undefined"
        if float(v).is_integer():
            return str(int(v))
        return f"{float(v):.6g}"
    return str(v)


def _compare(stat: float, rel: str, n: float) -> bool:
    if np.isnan(stat):
        return False
    return {">=": stat >= n, "<=": stat <= n, "=": stat == n}[rel]


@dataclass(frozen=True)
class Property:
    """One instantiation: its template, parameters (solved one included), truth and sentence."""

    template: str
    params: dict[str, Any]
    value: Any
    holds: bool
    sentence: str
    solved: str | None = None

    def __str__(self) -> str:
        return self.sentence


@dataclass(frozen=True)
class Template:
    """A property template.

    ``kind`` says what a partial instantiation solves:

    - ``"threshold"``: ``statistic(u, k, f)`` compared with ``rel`` against ``threshold``;
      ``fixed_rel``/``fixed_f`` pin ``rel``/``f`` for templates without those parameters;
    - ``"attribute-set"`` (IANR): ``statistic(u, k)`` is the set of attributes for which the
      property holds; ``a`` checks membership;
    - ``"attribute-order"`` (IANRLCMP): ``statistic(u, k)`` maps attributes to counts;
      ``a1, a2`` check ``count(a1) > count(a2)``.

    ``sentence(params)`` renders the natural-language statement.
    """

    name: str
    category: str
    title: str
    kind: str
    statistic: Callable[..., Any]
    sentence: Callable[[dict[str, Any], str], str]
    threshold: str = "n"
    fixed_rel: str | None = None
    uses_f: bool = False
    params: tuple[str, ...] = field(default=("k",))


TEMPLATES: dict[str, Template] = {}


def register_template(t: Template) -> Template:
    """Add a (user-defined) template to :data:`TEMPLATES`."""
    if t.kind not in ("threshold", "attribute-set", "attribute-order"):
        raise ValueError(f"template kind must be threshold, attribute-set or attribute-order, "
                         f"got {t.kind!r}")
    TEMPLATES[t.name] = t
    return t


def _check_k(k: Any) -> int:
    if not isinstance(k, (int, np.integer)) or isinstance(k, bool) or k < 1:
        raise ValueError(f"k must be a positive integer, got {k!r}")
    return int(k)


def instantiate(template: str | Template, universe: Universe, **params: Any) -> Property:
    """Evaluate ``template`` on ``universe``; see the module docstring for the semantics."""
    t = template if isinstance(template, Template) else _lookup(template)
    allowed = set(t.params)
    unknown = set(params) - allowed
    if unknown:
        raise ValueError(f"{t.name} has no parameter {sorted(unknown)[0]!r}; its parameters are "
                         f"{', '.join(t.params)}")
    p = dict(params)
    p["k"] = _check_k(p.get("k", 10))
    noun = universe.item_noun
    if t.kind == "threshold":
        f = p.get("f") if t.uses_f else None
        if t.uses_f:
            if f not in AGGREGATES:
                raise ValueError(f"{t.name}: f must be one of {', '.join(AGGREGATES)}, got {f!r}")
        rel = t.fixed_rel or RELATIONS.get(str(p.get("rel")))
        if rel is None:
            raise ValueError(f"{t.name}: rel must be one of <=, =, >=, got {p.get('rel')!r}")
        if not t.fixed_rel:
            p["rel"] = rel
        stat = float(t.statistic(universe, p["k"], f) if t.uses_f
                     else t.statistic(universe, p["k"]))
        solved = None
        if t.threshold not in p or p[t.threshold] is None:
            p[t.threshold] = stat
            solved = t.threshold
        thr = p[t.threshold]
        if not isinstance(thr, (int, float, np.integer, np.floating)):
            raise ValueError(f"{t.name}: {t.threshold} must be a number, got {thr!r}")
        holds = _compare(stat, rel, float(thr))
        return Property(t.name, p, stat, holds, t.sentence(p, noun), solved)
    stat = t.statistic(universe, p["k"])
    if t.kind == "attribute-set":
        if p.get("a") is None:
            p["a"] = stat
            return Property(t.name, p, stat, True, t.sentence(p, noun), "a")
        universe.attribute_index(p["a"])
        return Property(t.name, p, stat, p["a"] in stat, t.sentence(p, noun))
    order = tuple(sorted(stat, key=lambda a: (-stat[a], a)))
    if p.get("a1") is None and p.get("a2") is None:
        p["order"] = order
        return Property(t.name, p, order, True, t.sentence(p, noun), "order")
    if p.get("a1") is None or p.get("a2") is None:
        raise ValueError(f"{t.name}: give both a1 and a2, or neither")
    for key in ("a1", "a2"):
        universe.attribute_index(p[key])
    return Property(t.name, p, order, stat[p["a1"]] > stat[p["a2"]], t.sentence(p, noun))


def _lookup(name: str) -> Template:
    key = name.upper()
    if key not in TEMPLATES:
        raise ValueError(f"unknown template {name!r}; available: {', '.join(TEMPLATES)}")
    return TEMPLATES[key]


# ---------------------------------------------------------------------- the 12 built-ins
def _frel(p: dict[str, Any]) -> tuple[str, str]:
    return _F_WORDS[p["f"]], _REL_WORDS[p["rel"]]


def _s_nranks(p, noun):
    f, rel = _frel(p)
    return (f"The {f} number of {noun} ranked in the top {p['k']} for any user is {rel} "
            f"{_fmt(p['n'])}.")


def _s_nuprl(p, noun):
    f, rel = _frel(p)
    return (f"The {f} number of users to which a top {p['k']} ranked list is recommended is "
            f"{rel} {_fmt(p['n'])}.")


def _s_nuir(p, noun):
    f, rel = _frel(p)
    return (f"The {f} number of times {_item_word(noun)} is ranked in the top {p['k']} is "
            f"{rel} {_fmt(p['n'])}.")


def _item_word(noun: str) -> str:
    word = noun[:-1] if noun.endswith("s") else noun
    return ("an " if word[:1] in "aeiou" else "a ") + word


def _s_artk(p, noun):
    f, rel = _frel(p)
    return (f"The {f} average rating for {_item_word(noun)} in the top {p['k']} is {rel} "
            f"{_fmt(p['r'])}.")


def _s_nrtk(p, noun):
    f, rel = _frel(p)
    return (f"The {f} number of ratings for {_item_word(noun)} in the top {p['k']} is {rel} "
            f"{_fmt(p['n'])}.")


def _s_ianr(p, noun):
    a = p["a"]
    if isinstance(a, (frozenset, set)):
        if not a:
            return f"{noun.capitalize()} of every attribute are recommended in some top {p['k']} " \
                   "ranked list."
        names = sorted(a)
        joined = names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]
        return f"{joined} {noun} are never recommended in any top {p['k']} ranked list."
    return f"{a} {noun} are never recommended in any top {p['k']} ranked list."


def _s_ianrlcmp(p, noun):
    if "order" in p:
        return (f"Attributes ordered by how many of their {noun} are recommended in the top "
                f"{p['k']}: " + " > ".join(p["order"]) + ".")
    return f"{p['a1']} {noun} are recommended in the top {p['k']} more often than {p['a2']} {noun}."


def _nlists(u: Universe, k: int) -> float:
    return u.ranks(k).lists(ordered=True).n


_BUILTINS = [
    Template("NRANKS", "Coverage", "Number of items per Ranked list", "threshold",
             lambda u, k, f: u.ranks(k).count_per_user().agg(f), _s_nranks, uses_f=True,
             params=("k", "f", "rel", "n")),
    Template("NRI", "Coverage", "Number of Recommended Items", "threshold",
             lambda u, k: u.ranks(k).items().count(),
             lambda p, noun: f"There are at least {_fmt(p['n'])} {noun} in at least one top "
                             f"{p['k']} ranking.", fixed_rel=">=", params=("k", "n")),
    Template("NTRI", "Coverage", "Number of Top Ranked Items", "threshold",
             lambda u, k: u.ranks(1).items().count(),
             lambda p, noun: f"There are at least {_fmt(p['n'])} {noun} with a rank of 1 in at "
                             "least one ranked list.", fixed_rel=">=", params=("k", "n")),
    Template("NRLMU", "Diversity", "Number of Ranked Lists with Multiple Users", "threshold",
             lambda u, k: u.ranks(k).lists(ordered=True).shared(2),
             lambda p, noun: f"No more than {_fmt(p['n'])} top {p['k']} ranked lists are common "
                             "to more than 1 user.", fixed_rel="<=", params=("k", "n")),
    Template("NRL", "Diversity", "Number of Ranked Lists", "threshold", _nlists,
             lambda p, noun: f"There are at least {_fmt(p['n'])} unique lists of {p['k']} ranked "
                             f"{noun}.", fixed_rel=">=", params=("k", "n")),
    Template("NRS", "Diversity", "Number of Ranked Sets", "threshold",
             lambda u, k: u.ranks(k).lists(ordered=False).n,
             lambda p, noun: f"There are at least {_fmt(p['n'])} unique ranked sets of {p['k']} "
                             f"{noun}.", fixed_rel=">=", params=("k", "n")),
    Template("NUPRL", "Diversity", "Number of Users Per Ranked List", "threshold",
             lambda u, k, f: u.ranks(k).lists(ordered=True).size_per_user().agg(f), _s_nuprl,
             uses_f=True, params=("k", "f", "rel", "n")),
    Template("NUIR", "Diversity", "Number of Users to which an Item is Recommended", "threshold",
             lambda u, k, f: u.ranks(k).count_per_item().agg(f), _s_nuir, uses_f=True,
             params=("k", "f", "rel", "n")),
    Template("IANRLCMP", "Novelty", "Item Attribute Order by Number of Recommendations",
             "attribute-order", lambda u, k: u.ranks(k).items().attribute_counts(), _s_ianrlcmp,
             params=("k", "a1", "a2")),
    Template("ARTK", "Adaptivity", "Average Rating of items in the Top-k", "threshold",
             lambda u, k, f: u.ranks(k).items().rating_mean().agg(f), _s_artk, threshold="r",
             uses_f=True, params=("k", "f", "rel", "r")),
    Template("IANR", "Coverage and Diversity", "Item-Attributes Never Recommended",
             "attribute-set",
             lambda u, k: frozenset(u.attribute_names) - u.ranks(k).items().attributes(),
             _s_ianr, params=("k", "a")),
    Template("NRTK", "Novelty and Adaptivity", "Number of Ratings of items in the Top-k",
             "threshold", lambda u, k, f: u.ranks(k).items().rating_count().agg(f), _s_nrtk,
             uses_f=True, params=("k", "f", "rel", "n")),
]
for _t in _BUILTINS:
    register_template(_t)
