"""``FuzzSpec``: a fuzzing heuristic as a perturbation spec ``(log, rng) -> (log, record)``."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from recaudit.data import Interactions
from recaudit.errors import ConfigError
from recaudit.fuzz._heuristics import (
    DEFAULT_PORTFOLIO,
    HEURISTICS,
    INFLUENCE_OF,
    KIND_OF,
    FuzzContext,
    generate,
)
from recaudit.fuzz._influence import Recommendations
from recaudit.fuzz._modifications import FuzzRecord, apply_modifications, pair_keys

__all__ = ["FuzzSpec", "audit_inputs"]

_PARAMS = {"epsilon": float, "scale": tuple, "portfolio": tuple}


@dataclass(frozen=True)
class FuzzSpec:
    """Heuristic ``heuristic`` (Table 4.4 name or ``APORTFOLIO``) making ``size`` modifications.

    ``params``: ``epsilon`` (rating-influence and AMR window, default 0.05), ``scale`` (rating
    values; default: those in the log), ``portfolio`` (APORTFOLIO's members, default
    AMU, ALI, AMR, AMA). Canonical name: ``fuzz:<HEURISTIC>:<size>[:key=v1+v2...]``, e.g.
    ``fuzz:AMR:10`` or ``fuzz:APORTFOLIO:10:portfolio=AMU+AMR``; :meth:`parse` reads it back.
    """

    heuristic: str
    size: int
    params: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        h = str(self.heuristic).upper()
        if h not in HEURISTICS and h != "APORTFOLIO":
            raise ConfigError(f"unknown fuzzing heuristic {self.heuristic!r}; use one of "
                              f"{', '.join(sorted([*HEURISTICS, 'APORTFOLIO']))}")
        object.__setattr__(self, "heuristic", h)
        if isinstance(self.size, bool) or not isinstance(self.size, (int, np.integer)) \
                or self.size < 0:
            raise ConfigError(f"fuzz size must be an integer >= 0, got {self.size!r}")
        object.__setattr__(self, "size", int(self.size))
        params = dict(self.params or {})
        for key, value in params.items():
            if key not in _PARAMS:
                raise ConfigError(f"unknown fuzz parameter {key!r} for {h}; use "
                                  f"{', '.join(sorted(_PARAMS))}")
            if _PARAMS[key] is tuple:
                params[key] = tuple(value.split("+") if isinstance(value, str) else value)
            else:
                params[key] = float(value)
        if "scale" in params:
            params["scale"] = tuple(float(v) for v in params["scale"])
        if "portfolio" in params:
            params["portfolio"] = tuple(str(p).upper() for p in params["portfolio"])
            if h != "APORTFOLIO":
                raise ConfigError(f"'portfolio' applies to APORTFOLIO only, not {h}")
        if params.get("epsilon", 0.0) < 0:
            raise ConfigError("fuzz parameter epsilon must be >= 0")
        object.__setattr__(self, "params", params)

    # ------------------------------------------------------------------ naming
    @property
    def name(self) -> str:
        parts = ["fuzz", self.heuristic, str(self.size)]
        for key in sorted(self.params):
            v = self.params[key]
            parts.append(f"{key}=" + ("+".join(_fmt(x) for x in v) if isinstance(v, tuple)
                                      else _fmt(v)))
        return ":".join(parts)

    @classmethod
    def parse(cls, name: str) -> FuzzSpec:
        """Read a canonical name (``fuzz:`` prefix optional)."""
        parts = str(name).strip().split(":")
        if parts and parts[0].lower() == "fuzz":
            parts = parts[1:]
        if len(parts) < 2:
            raise ConfigError(f"cannot read fuzz spec {name!r}; write fuzz:<HEURISTIC>:<size>"
                              "[:key=value], e.g. fuzz:AMR:10")
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
        return cls(parts[0], size, params)

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


def _fmt(v: Any) -> str:
    if isinstance(v, float):
        return repr(v)
    return str(v)


def audit_inputs(split: Any, base_items: np.ndarray, k: int | None = 10) -> dict[str, Any]:
    """Keyword arguments for :meth:`FuzzSpec.apply` inside an audit trial.

    ``split`` is a :class:`recaudit.data.Split`, ``base_items`` the baseline model's rank lists
    for ``split.queries`` (``[n_queries, depth]``). Returns ``recommendations`` (each user's
    list from their *first* query, cut to ``k``) and ``protected`` (the test pairs and the
    validation targets, which fuzzing must never add). Usage in a trial runner::

        train, record = spec.apply(split.train, rng, **audit_inputs(split, base.items, k))
    """
    q = split.queries
    items = np.asarray(base_items)
    if items.ndim != 2 or items.shape[0] != len(q.user):
        raise ValueError(f"base_items must have one row per query ({len(q.user)}), got shape "
                         f"{items.shape}")
    users, first = np.unique(np.asarray(q.user, dtype=np.int64), return_index=True)
    recs = Recommendations(users, items[first] if k is None else items[first, :k])
    n_items = split.train.n_items
    keys = [pair_keys(split.test.user, split.test.item, n_items)]
    if split.validation is not None:
        v = split.validation
        ok = np.asarray(v.target) >= 0
        keys.append(pair_keys(np.asarray(v.user)[ok], np.asarray(v.target)[ok], n_items))
    return {"recommendations": recs, "protected": np.unique(np.concatenate(keys))}
