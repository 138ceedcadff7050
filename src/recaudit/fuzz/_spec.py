"""``FuzzSpec``: a fuzzing heuristic as a perturbation of the ``fuzz:`` family.

Importing this module registers the family with :func:`recaudit.perturb.register_family`, so
``recaudit.perturb.parse("fuzz:AMR:10")`` and every runner that asks the registry (the audit)
can use the heuristics of Shriver 2018 Chapter 4 without knowing about them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from recaudit.config import Config
from recaudit.data import Interactions
from recaudit.errors import ConfigError, did_you_mean
from recaudit.fuzz._heuristics import (
    DEFAULT_PORTFOLIO,
    HEURISTICS,
    INFLUENCE_OF,
    KIND_OF,
    FuzzContext,
    generate,
)
from recaudit.fuzz._influence import Recommendations
from recaudit.fuzz._modifications import FuzzRecord, apply_modifications
from recaudit.perturb import Context, Description, Needs, register_family

__all__ = ["FuzzSpec", "PREFIX"]

#: The name prefix of the family: ``fuzz:<HEURISTIC>:<size>[:key=v1+v2...]``.
PREFIX = "fuzz"
_PARAMS = {"epsilon": float, "scale": tuple, "portfolio": tuple}


@dataclass(frozen=True)
class FuzzSpec(Config):
    """Heuristic ``heuristic`` making ``size`` modifications (Shriver 2018 Table 4.4).

    heuristic: a Table 4.4 name or ``APORTFOLIO``. size: modifications per set (``M``).
    params: ``epsilon`` (rating-influence and AMR window, default 0.05), ``scale`` (rating
    values; default: those in the log), ``portfolio`` (APORTFOLIO's members, default AMU, ALI,
    AMR, AMA). Canonical name: ``fuzz:<HEURISTIC>:<size>[:key=v1+v2...]``, e.g. ``fuzz:AMR:10``
    or ``fuzz:APORTFOLIO:10:portfolio=AMU+AMR``; :meth:`parse` reads it back.
    """

    heuristic: str
    size: int
    params: Mapping[str, Any] = field(default_factory=dict)

    def validate(self) -> None:
        h = self.heuristic.upper()
        names = sorted([*HEURISTICS, "APORTFOLIO"])
        if h not in names:
            raise self.invalid("heuristic", f"unknown fuzzing heuristic {self.heuristic!r}."
                               f"{did_you_mean(h, names)} Use one of {', '.join(names)}")
        object.__setattr__(self, "heuristic", h)
        if self.size < 0:
            raise self.invalid("size", f"fuzz size must be an integer >= 0, got {self.size!r}")
        params = dict(self.params)
        for key, value in params.items():
            if key not in _PARAMS:
                raise self.invalid("params", f"unknown fuzz parameter {key!r} for {h}."
                                   f"{did_you_mean(key, _PARAMS)} Use "
                                   f"{', '.join(sorted(_PARAMS))}")
            try:
                if _PARAMS[key] is tuple:
                    params[key] = tuple(value.split("+") if isinstance(value, str) else value)
                else:
                    params[key] = float(value)
                if key == "scale":
                    params[key] = tuple(float(v) for v in params[key])
            except (TypeError, ValueError):
                raise self.invalid("params", f"fuzz parameter {key}={value!r} is not "
                                   f"{'a number' if key == 'epsilon' else 'a list'}") from None
        if "portfolio" in params:
            params["portfolio"] = tuple(str(p).upper() for p in params["portfolio"])
            if h != "APORTFOLIO":
                raise self.invalid("params", f"'portfolio' applies to APORTFOLIO only, not {h}")
        if params.get("epsilon", 0.0) < 0:
            raise self.invalid("params", "fuzz parameter epsilon must be >= 0")
        object.__setattr__(self, "params", params)

    # ------------------------------------------------------------------ naming
    @property
    def name(self) -> str:
        parts = [PREFIX, self.heuristic, str(self.size)]
        for key in sorted(self.params):
            v = self.params[key]
            parts.append(f"{key}=" + ("+".join(_fmt(x) for x in v) if isinstance(v, tuple)
                                      else _fmt(v)))
        return ":".join(parts)

    @classmethod
    def parse(cls, name: str, **overrides: Any) -> FuzzSpec:
        """Read a canonical name (``fuzz:`` prefix optional); ``overrides`` are parameters."""
        parts = str(name).strip().split(":")
        if parts and parts[0].lower() == PREFIX:
            parts = parts[1:]
        if len(parts) < 2:
            raise ConfigError(f"cannot read fuzz spec {name!r}; write fuzz:<HEURISTIC>:<size>"
                              "[:key=value], e.g. fuzz:AMR:10")
        if str(name).rstrip().endswith("+inputs"):
            raise ConfigError(f"fuzz spec {name!r}: '+inputs' does not apply to fuzzing (it "
                              "edits ratings, not the test inputs of sequences)",
                              hint=f"write {str(name).strip()[:-len('+inputs')]!r}")
        try:
            size = int(parts[1])
        except ValueError:
            raise ConfigError(f"fuzz spec {name!r}: size {parts[1]!r} is not an integer") from None
        params: dict[str, Any] = {}
        for p in parts[2:]:
            key, eq, value = p.partition("=")
            if not eq:
                raise ConfigError(f"fuzz spec {name!r}: parameter {p!r} must be key=value")
            params[key] = value
        return cls(parts[0], size, {**params, **overrides})

    def to_dict(self) -> dict[str, Any]:
        return {"family": PREFIX, **super().to_dict()}

    @classmethod
    def from_dict(cls, data: Any, *, key: str | None = None, what: str | None = None,
                  noun: str = "key") -> FuzzSpec:
        if isinstance(data, Mapping) and data.get("family") == PREFIX:
            data = {k: v for k, v in data.items() if k != "family"}
        return super().from_dict(data, key=key, what=what or "a fuzz spec", noun=noun)

    # ------------------------------------------------------------------ behaviour
    @property
    def kind(self) -> str | None:
        """Modification type (``add``/``remove``/``change``; ``None`` for ZERO)."""
        if self.heuristic == "APORTFOLIO":
            kinds = {KIND_OF[m] for m in self.members}
            return kinds.pop() if len(kinds) == 1 else "mixed"
        return KIND_OF[self.heuristic]

    @property
    def members(self) -> tuple[str, ...]:
        return tuple(self.params.get("portfolio", DEFAULT_PORTFOLIO))

    @property
    def needs_recommendations(self) -> bool:
        """True when :meth:`apply` needs the baseline recommendations (influence-guided)."""
        names = self.members if self.heuristic == "APORTFOLIO" else (self.heuristic,)
        return self.size > 0 and any(n in INFLUENCE_OF for n in names)

    @property
    def needs(self) -> Needs:
        """Influence-guided heuristics read the baseline's lists; every heuristic keeps off the
        held-out pairs; every one but ZERO (and a set of size 0) draws from its generator
        (random pairs, ratings, tie-breaks)."""
        return Needs(recommendations=self.needs_recommendations, protected=True,
                     rng=not self.describe().reference)

    def describe(self) -> Description:
        """Family ``fuzz:<HEURISTIC>[:params]``, edit the modification type, count ``M``;
        ZERO (and size 0) changes nothing: a reference."""
        family = ":".join([PREFIX, self.heuristic, *self.name.split(":")[3:]])
        if self.size == 0 or self.kind is None:
            return Description(family, None, None, reference=True)
        return Description(family, self.kind, self.size)

    def apply(self, log: Interactions, rng: np.random.Generator, *,
              recommendations: Recommendations | None = None,
              protected: np.ndarray | None = None) -> tuple[Interactions, FuzzRecord]:
        """Generate a modification set on ``log`` and apply it atomically.

        ``recommendations``: the baseline top-k lists (needed when
        :attr:`needs_recommendations`); ``protected``: pair keys ``user * n_items + item``
        that must never be added (the test interactions).
        """
        if self.needs_recommendations and recommendations is None:
            raise ConfigError(f"{self.name} is influence-guided: pass the baseline "
                              "recommendations (recommendations=Recommendations(users, items))")
        ctx = FuzzContext(log, recommendations,
                          np.zeros(0, np.int64) if protected is None else protected,
                          None if "scale" not in self.params else np.asarray(self.params["scale"]),
                          float(self.params.get("epsilon", 0.05)))
        mods, info = generate(self.heuristic, ctx, self.size, rng, portfolio=self.members)
        return apply_modifications(log, mods, heuristic=self.name, info=info)

    def perturb(self, train: Interactions, rng: np.random.Generator, context: Context
                ) -> tuple[Interactions, FuzzRecord]:
        """The protocol form: each user's list is the one of their *first* query in
        ``context`` (cut to ``context.k``); ``context.protected`` is kept off."""
        recs = None
        if self.needs_recommendations:
            if context.queries is None or context.baseline is None:
                raise ValueError(f"{self.name} needs context.queries and context.baseline")
            users, first = np.unique(np.asarray(context.queries.user, dtype=np.int64),
                                     return_index=True)
            recs = Recommendations.of(users, context.baseline.items[first], context.k)
        return self.apply(train, rng, recommendations=recs, protected=context.protected)


def _fmt(v: Any) -> str:
    if isinstance(v, float):
        return repr(v)
    return str(v)


def _examples() -> list[str]:
    return [f"{PREFIX}:{h}:<n>" for h in sorted([*HEURISTICS, "APORTFOLIO"])]


#: What each heuristic does to the ratings (Shriver 2018 Tables 4.2 and 4.4), for
#: ``recaudit perturbations list``.
_WHAT = {
    "ZERO": "no modification: the fuzzing baseline",
    "ARAND": "add <n> ratings: random users, random unrated items, random values",
    "RRAND": "remove <n> random ratings",
    "CBRAND": "change <n> random ratings to the lowest value of the scale",
    "CTRAND": "change <n> random ratings to the highest value of the scale",
    "AMU": "add <n> ratings of unrated items by the most influential user",
    "RMU": "remove <n> ratings of the most influential user",
    "CMU": "change <n> ratings of the most influential user to the lowest value",
    "ALI": "add <n> ratings by random users to the least influential items",
    "AMR": "add <n> ratings to items whose mean is close to the most influential rating value",
    "AMA": "add <n> low ratings by random users to the item of the most influential attributes",
    "APORTFOLIO": "<n> modifications, round robin over several heuristics (default AMU, ALI, "
                  "AMR, AMA)",
}


def _describe(name: str) -> tuple[str, str]:
    heuristic = name.split(":")[1]
    text = _WHAT.get(heuristic, "")
    params = "epsilon, scale" + (", portfolio" if heuristic == "APORTFOLIO" else "")
    return text, params


register_family(PREFIX, parse=FuzzSpec.parse, from_dict=FuzzSpec.from_dict, examples=_examples,
                describe=_describe, title="fuzzing (Shriver 2018)")
