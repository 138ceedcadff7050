"""Fuzzing heuristics (Shriver 2018 Tables 4.2 and 4.4, §4.2.3).

Each heuristic turns (training log, baseline recommendations, size ``M``, rng) into a
:class:`~recaudit.fuzz.ModificationSet` of one modification type:

========== ====== ============================================================= =========
name       type   what                                                          influence
========== ====== ============================================================= =========
ZERO       --     no modification                                               --
ARAND      add    random user, random unrated item, random value                --
RRAND      remove random rating                                                 --
CBRAND     change random rating to the lowest value of the scale                --
CTRAND     change random rating to the highest value of the scale               --
AMU        add    random unrated items, random values, most influential user    user
RMU        remove random ratings of the most influential user                   user
CMU        change random ratings of the most influential user to the low value  user
ALI        add    random users, random values, least influential item (updated  item
                  after each modification)
AMR        add    random value, random user, random item whose mean rating is   rating
                  within ε (0.05) of the most influential rating value
AMA        add    low value, random users, item of highest summed eq. 4.9 score attribute
APORTFOLIO mixed  round robin over a list of heuristics (default AMU, ALI, AMR,  --
                  AMA, the add heuristics of §4.2.3)
========== ====== ============================================================= =========

Documented choices where the thesis is silent:

- "Random" means uniform (ARAND: uniform over the unrated, unprotected pairs, by rejection
  sampling; RRAND/CBRAND/CTRAND: uniform over the rated pairs). The rating scale is the
  distinct values of the training log unless ``scale`` is given; low/top are its ends.
- Modifications of a set are on distinct ``(user, item)`` pairs, and an added pair is never a
  *protected* pair (the test interactions, so fuzzing never touches the test data). Change
  heuristics skip ratings already at the target value (a change must change something).
- Ties in influence are broken uniformly at random (seeded). When the chosen user or item
  cannot take all ``M`` modifications (e.g. RMU with ``M`` larger than the user's ratings), the
  heuristic continues with the next aspect in influence order; ``info["chosen"]`` lists the
  aspects used. AMR draws a fresh item (uniformly among the ε-close items) per modification.
- ALI picks the least influential item per modification, counting the set's earlier
  additions (each raises the item's I^I by one), so ``M`` ratings spread over the items tied
  at the lowest influence instead of piling onto one. Table 4.6 supports this reading: ALI's
  instability grows about linearly with ``M`` (User-User 0.0038, 0.037, 0.31 for 1, 10, 100),
  as it does when every modification reaches another item. AMU, CMU and AMA keep their
  aspect either way (added ratings never lower the top user's I^U, changes leave it as it is,
  attribute influence depends on the fixed recommendations only); RMU keeps the user that was
  most influential before the set, although its removals may lower that user's I^U.
- APORTFOLIO: modification ``j`` comes from heuristic ``j mod m``; the members see the pairs
  already used, so the set stays conflict-free.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from recaudit.data import Interactions
from recaudit.errors import DataError
from recaudit.fuzz import _influence as inf
from recaudit.fuzz._modifications import ADD, CHANGE, REMOVE, ModificationSet, pair_keys

__all__ = ["HEURISTICS", "KIND_OF", "BASELINE_OF", "INFLUENCE_OF", "FuzzContext", "generate"]

_Result = tuple[ModificationSet, dict[str, Any]]


@dataclass
class FuzzContext:
    """What heuristics read: the training log, baseline recommendations (influence-guided
    heuristics only), protected pair keys, the rating scale and ε."""

    train: Interactions
    recommendations: inf.Recommendations | None = None
    protected: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    scale: np.ndarray | None = None
    epsilon: float = 0.05

    def __post_init__(self) -> None:
        t = self.train
        if t.rating is None:
            raise DataError("fuzzing modifies ratings; this log has none", source=t.name,
                            column="rating", hint="use a dataset with ratings")
        keys = pair_keys(t.user, t.item, t.n_items)
        # latest value of every rated pair (rows are in time order)
        rev_u, first = np.unique(keys[::-1], return_index=True)
        self.rated_keys = rev_u  # sorted unique
        self.rated_value = t.rating[::-1][first].astype(np.float64)
        self.protected = np.unique(np.asarray(self.protected, dtype=np.int64))
        self.levels: np.ndarray = inf.rating_scale(t) if self.scale is None else \
            np.unique(np.asarray(self.scale, dtype=np.float64))
        self.scale = self.levels
        if len(self.levels) == 0:
            raise ValueError("the rating scale is empty")

    @property
    def n_items(self) -> int:
        return self.train.n_items

    def blocked(self, keys: np.ndarray, used: np.ndarray) -> np.ndarray:
        """True where a pair may not be added: rated, protected or already used."""
        return (_isin_sorted(keys, self.rated_keys) | _isin_sorted(keys, self.protected)
                | np.isin(keys, used))

    def recs(self) -> inf.Recommendations:
        if self.recommendations is None:
            raise ValueError("influence-guided heuristics need the baseline recommendations; "
                             "pass recommendations=Recommendations(users, top_k_items)")
        return self.recommendations


def _isin_sorted(x: np.ndarray, sorted_keys: np.ndarray) -> np.ndarray:
    if len(sorted_keys) == 0:
        return np.zeros(len(x), dtype=bool)
    pos = np.minimum(np.searchsorted(sorted_keys, x), len(sorted_keys) - 1)
    return sorted_keys[pos] == x


def _order(scores: np.ndarray, rng: np.random.Generator, *, descending: bool) -> np.ndarray:
    """Indices by score (ties in random order)."""
    perm = rng.permutation(len(scores))
    key = -scores[perm] if descending else scores[perm]
    return perm[np.argsort(key, kind="stable")]


def _values(ctx: FuzzContext, n: int, rng: np.random.Generator) -> np.ndarray:
    return ctx.levels[rng.integers(0, len(ctx.levels), size=n)]


# ---------------------------------------------------------------------------- pair samplers
def _free_items(ctx: FuzzContext, user: int, used: np.ndarray) -> np.ndarray:
    items = np.arange(ctx.n_items, dtype=np.int64)
    return items[~ctx.blocked(pair_keys(np.full(ctx.n_items, user), items, ctx.n_items), used)]


def _free_users(ctx: FuzzContext, item: int, used: np.ndarray) -> np.ndarray:
    users = np.arange(ctx.train.n_users, dtype=np.int64)
    return users[~ctx.blocked(pair_keys(users, np.full(len(users), item), ctx.n_items), used)]


def _rated_pairs(ctx: FuzzContext, used: np.ndarray, *, user: int | None = None,
                 not_value: float | None = None) -> np.ndarray:
    keys = ctx.rated_keys
    ok = ~np.isin(keys, used)
    if user is not None:
        ok &= keys // ctx.n_items == user
    if not_value is not None:
        ok &= ctx.rated_value != not_value
    return keys[ok]


def _add_along(ctx: FuzzContext, n: int, rng: np.random.Generator, used: np.ndarray,
               order: np.ndarray, *, by: str, value: float | None) -> _Result:
    """Add ``n`` ratings to the aspects in ``order`` (users or items), filling each first."""
    users, items, chosen = [], [], []
    need = n
    for a in order:
        if need == 0:
            break
        free = _free_items(ctx, int(a), used) if by == "user" else _free_users(ctx, int(a), used)
        if len(free) == 0:
            continue
        pick = rng.choice(free, size=min(need, len(free)), replace=False)
        fixed = np.full(len(pick), int(a), dtype=np.int64)
        users.append(fixed if by == "user" else pick)
        items.append(pick if by == "user" else fixed)
        chosen.append(int(a))
        need -= len(pick)
    if need:
        raise ValueError(f"cannot place {n} add modifications: only {n - need} free pairs")
    u, i = np.concatenate(users), np.concatenate(items)
    vals = _values(ctx, n, rng) if value is None else np.full(n, value)
    return ModificationSet.of(ADD, u, i, vals), {"chosen": chosen}


def _edit_along(ctx: FuzzContext, n: int, rng: np.random.Generator, used: np.ndarray,
                order: np.ndarray, kind: str, value: float | None) -> _Result:
    keys, chosen = [], []
    need = n
    for u in order:
        if need == 0:
            break
        cand = _rated_pairs(ctx, used, user=int(u), not_value=value)
        if len(cand) == 0:
            continue
        keys.append(rng.choice(cand, size=min(need, len(cand)), replace=False))
        chosen.append(int(u))
        need -= len(keys[-1])
    if need:
        raise ValueError(f"cannot place {n} {kind} modifications: only {n - need} ratings")
    k = np.concatenate(keys)
    return ModificationSet.of(kind, k // ctx.n_items, k % ctx.n_items, value), {"chosen": chosen}


# ---------------------------------------------------------------------------- heuristics
def _zero(ctx: FuzzContext, n: int, rng: np.random.Generator, used: np.ndarray) -> _Result:
    return ModificationSet.empty(), {}


def _arand(ctx: FuzzContext, n: int, rng: np.random.Generator, used: np.ndarray) -> _Result:
    got = np.zeros(0, dtype=np.int64)
    for _ in range(1000):
        if len(got) >= n:
            break
        m = 2 * (n - len(got)) + 8
        keys = pair_keys(rng.integers(0, ctx.train.n_users, m), rng.integers(0, ctx.n_items, m),
                         ctx.n_items)
        keys = keys[~ctx.blocked(keys, np.concatenate([used, got]))]
        _, first = np.unique(keys, return_index=True)  # keep draw order, drop repeats
        got = np.concatenate([got, keys[np.sort(first)]])[:n]
    if len(got) < n:
        raise ValueError(f"ARAND: could not find {n} unrated pairs")
    return ModificationSet.of(ADD, got // ctx.n_items, got % ctx.n_items, _values(ctx, n, rng)), {}


def _edit_random(kind: str, which: str | None) -> Callable[..., _Result]:
    def run(ctx: FuzzContext, n: int, rng: np.random.Generator, used: np.ndarray) -> _Result:
        value = None if which is None else float(ctx.levels[0 if which == "low" else -1])
        cand = _rated_pairs(ctx, used, not_value=value)
        if len(cand) < n:
            raise ValueError(f"only {len(cand)} ratings can take a {kind}; asked for {n}")
        k = rng.choice(cand, size=n, replace=False)
        return ModificationSet.of(kind, k // ctx.n_items, k % ctx.n_items, value), {}
    return run


def _by_user(kind: str) -> Callable[..., _Result]:
    def run(ctx: FuzzContext, n: int, rng: np.random.Generator, used: np.ndarray) -> _Result:
        scores = inf.user_influence(ctx.train, ctx.recs())
        order = _order(scores, rng, descending=True)
        if kind == ADD:
            mods, info = _add_along(ctx, n, rng, used, order, by="user", value=None)
        else:
            low = float(ctx.levels[0]) if kind == CHANGE else None
            mods, info = _edit_along(ctx, n, rng, used, order, kind, low)
        info["influence"] = [int(scores[u]) for u in info["chosen"]]
        return mods, info
    return run


def _ali(ctx: FuzzContext, n: int, rng: np.random.Generator, used: np.ndarray) -> _Result:
    """Each modification goes to the item least influential *at that point*: an added rating
    by a user with recommendations raises the item's I^I by one, so the set spreads over the
    items tied at the lowest influence (ties in a random order drawn once)."""
    scores = inf.item_influence(ctx.train, ctx.recs())
    recs = ctx.recs()
    has_rec = np.zeros(ctx.train.n_users, dtype=np.int64)
    has_rec[recs.users[(recs.items >= 0).any(axis=1)]] = 1
    level = scores.astype(np.int64)
    tie = rng.permutation(ctx.n_items)
    users, items = np.zeros(n, np.int64), np.zeros(n, np.int64)
    taken = np.asarray(used, dtype=np.int64)
    for j in range(n):
        for i in np.lexsort((tie, level)):
            free = _free_users(ctx, int(i), taken)
            if len(free):
                break
        else:
            raise ValueError(f"cannot place {n} add modifications: only {j} free pairs")
        users[j], items[j] = rng.choice(free), i
        taken = np.append(taken, pair_keys(users[j], i, ctx.n_items))
        level[i] += has_rec[users[j]]
    chosen = list(dict.fromkeys(items.tolist()))
    info = {"chosen": chosen, "influence": [int(scores[i]) for i in chosen]}
    return ModificationSet.of(ADD, users, items, _values(ctx, n, rng)), info


def _amr(ctx: FuzzContext, n: int, rng: np.random.Generator, used: np.ndarray) -> _Result:
    values, scores = inf.rating_influence(ctx.train, ctx.recs(), ctx.levels, epsilon=ctx.epsilon)
    if scores.max(initial=0) == 0:
        raise ValueError("AMR: no recommended item has a mean rating near any scale value")
    best = float(values[_order(scores, rng, descending=True)[0]])
    means = inf.item_mean_ratings(ctx.train)
    cands = np.flatnonzero(np.abs(means - best) <= ctx.epsilon + 1e-9)
    users, items = np.zeros(n, np.int64), np.zeros(n, np.int64)
    taken = list(used)
    for j in range(n):
        for _ in range(64):
            i = int(rng.choice(cands))
            free = _free_users(ctx, i, np.asarray(taken, np.int64))
            if len(free):
                break
        else:
            raise ValueError(f"AMR: the items near rating {best} have no free users left")
        users[j], items[j] = rng.choice(free), i
        taken.append(int(pair_keys(users[j], i, ctx.n_items)))
    info = {"rating": best, "influence": int(scores.max()), "n_candidate_items": len(cands)}
    return ModificationSet.of(ADD, users, items, _values(ctx, n, rng)), info


def _ama(ctx: FuzzContext, n: int, rng: np.random.Generator, used: np.ndarray) -> _Result:
    scores = inf.item_attribute_influence(ctx.train, ctx.recs())
    order = _order(scores, rng, descending=True)
    mods, info = _add_along(ctx, n, rng, used, order, by="item", value=float(ctx.levels[0]))
    info["influence"] = [float(scores[i]) for i in info["chosen"]]
    return mods, info


HEURISTICS: dict[str, Callable[..., _Result]] = {
    "ZERO": _zero, "ARAND": _arand, "RRAND": _edit_random(REMOVE, None),
    "CBRAND": _edit_random(CHANGE, "low"), "CTRAND": _edit_random(CHANGE, "top"),
    "AMU": _by_user(ADD), "RMU": _by_user(REMOVE), "CMU": _by_user(CHANGE),
    "ALI": _ali, "AMR": _amr, "AMA": _ama,
}
#: modification type of each heuristic (APORTFOLIO: that of its members when they agree).
KIND_OF = {"ZERO": None, "ARAND": ADD, "RRAND": REMOVE, "CBRAND": CHANGE, "CTRAND": CHANGE,
           "AMU": ADD, "RMU": REMOVE, "CMU": CHANGE, "ALI": ADD, "AMR": ADD, "AMA": ADD,
           "APORTFOLIO": ADD}
#: the random baseline each heuristic is compared with (Tables 4.6-4.9).
BASELINE_OF = {"ZERO": "ARAND", "AMU": "ARAND", "ALI": "ARAND", "AMR": "ARAND", "AMA": "ARAND",
               "APORTFOLIO": "ARAND", "RMU": "RRAND", "CMU": "CBRAND", "CTRAND": "CBRAND"}
#: which influence model a heuristic uses (None: none, no recommendations needed).
INFLUENCE_OF = {"AMU": "user", "RMU": "user", "CMU": "user", "ALI": "item", "AMR": "rating",
                "AMA": "attribute"}
DEFAULT_PORTFOLIO = ("AMU", "ALI", "AMR", "AMA")


def generate(name: str, ctx: FuzzContext, size: int, rng: np.random.Generator, *,
             portfolio: tuple[str, ...] = DEFAULT_PORTFOLIO) -> _Result:
    """Run heuristic ``name`` for ``size`` modifications (validated names and sizes); a set
    of size 0 is empty whatever the heuristic (it reads neither the recommendations nor the
    generator)."""
    name = name.upper()
    if int(size) == 0 and (name in HEURISTICS or name == "APORTFOLIO"):
        return ModificationSet.empty(), {}
    if name == "APORTFOLIO":
        return _portfolio(ctx, size, rng, tuple(p.upper() for p in portfolio))
    if name not in HEURISTICS:
        raise ValueError(f"unknown heuristic {name!r}; use one of "
                         f"{sorted([*HEURISTICS, 'APORTFOLIO'])}")
    return HEURISTICS[name](ctx, int(size), rng, np.zeros(0, np.int64))


def _portfolio(ctx: FuzzContext, size: int, rng: np.random.Generator,
               members: tuple[str, ...]) -> _Result:
    if not members:
        raise ValueError("APORTFOLIO needs at least one member heuristic")
    bad = [m for m in members if m not in HEURISTICS or m == "ZERO"]
    if bad:
        raise ValueError(f"APORTFOLIO member {bad[0]!r} is not a modifying heuristic; use "
                         f"some of {sorted(set(HEURISTICS) - {'ZERO'})}")
    m = len(members)
    parts, infos, used = [], {}, np.zeros(0, np.int64)
    for h, member in enumerate(members):
        count = len(range(h, size, m))  # modifications j with j mod m == h
        if count == 0:
            parts.append(ModificationSet.empty())
            continue
        mods, info = HEURISTICS[member](ctx, count, rng, used)
        used = np.concatenate([used, pair_keys(mods.user, mods.item, ctx.n_items)])
        parts.append(mods)
        infos[member] = info
    # interleave: position j takes the (j // m)-th modification of member j mod m
    offsets = np.cumsum([0] + [len(p) for p in parts])
    order = np.array([offsets[j % m] + j // m for j in range(size)], dtype=np.int64)
    return ModificationSet.concat(parts).take(order), {"members": list(members), **infos}
