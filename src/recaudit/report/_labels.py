"""Reading perturbation labels: which family a trial belongs to, its count, its position.

The store keeps each trial's perturbation as a label: the name given in the config
(``"random-delete"``, ``"casper-delete-4"``, ``"remove-end-5"``) or, for a perturbation given
as a mapping, its canonical JSON (``{"name": "casper-delete", "k": 4}``). The report groups
trials by what the label says:

- **reference** trials change nothing in the data: ``none`` (the control; every RLS is 1)
  and ``seed-only`` (same data, another training seed: the instability a model has anyway,
  seed 003 RQ1);
- **position removal** (seed 003 §3.1): the label names a position (``beginning``,
  ``middle``, ``end``; also ``begin``/``start``/``first``, ``mid``/``centre``,
  ``last``) together with ``remove``/``removal``/``position``, and a count ``n``
  (``remove-end-5``, ``position-middle:n=3``, ``{"name": "remove", "position": "end",
  "n": 5}``); without a count ``n`` is 1;
- **counted** perturbations (seed 000 §7.4, Figure 8(a)): a trailing ``-k<count>`` (the
  :func:`recaudit.perturb.parse` syntax, ``casper-delete-k4``), a trailing integer, or a
  ``k=``/``n=``/``count=`` part (``casper-delete:k=4``, ``{"name": "casper-delete",
  "count": 4}``) gives the count; the family is the label without it.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

__all__ = ["PerturbationInfo", "parse_label", "REFERENCE"]

#: Labels of trials that perturb no data.
REFERENCE = ("none", "seed-only")

_POSITIONS = {"beginning": "beginning", "begin": "beginning", "start": "beginning",
              "first": "beginning", "middle": "middle", "mid": "middle", "centre": "middle",
              "center": "middle", "end": "end", "last": "end"}
_REMOVAL = {"remove", "removal", "position", "pos", "drop"}
_COUNT_KEYS = ("k", "n", "count", "num", "number")
_SPLIT = re.compile(r"[-_:=,;/\s()]+")
_KV_COUNT = re.compile(r"(?:^|[-_:,;/\s(])(?:k|n|count|num|number)\s*=\s*(\d+)\)?$")
_TRAILING = re.compile(r"[-_:\s]+k?(\d+)$")


@dataclass(frozen=True)
class PerturbationInfo:
    """What a perturbation label says.

    ``family`` is the label without its count (for grouping counted perturbations),
    ``count`` the number of perturbed interactions (or removed items) when the label gives
    one, ``position`` one of ``beginning``/``middle``/``end`` for position removal.
    """

    label: str
    family: str
    count: int | None = None
    position: str | None = None

    @property
    def reference(self) -> bool:
        return self.label in REFERENCE


def parse_label(label: str) -> PerturbationInfo:
    """Parse a stored perturbation label (see the module docstring for the shapes read)."""
    text = str(label).strip()
    if text.startswith("{"):
        try:
            spec = json.loads(text)
        except json.JSONDecodeError:
            spec = None
        if isinstance(spec, dict):
            return _from_mapping(text, spec)
    lower = text.lower()
    tokens = [t for t in _SPLIT.split(lower) if t]
    position = next((_POSITIONS[t] for t in tokens if t in _POSITIONS), None)
    count, family = _count(text)
    if position is not None and _REMOVAL.intersection(tokens):
        return PerturbationInfo(text, f"remove-{position}", count or 1, position)
    return PerturbationInfo(text, family if count is not None else text, count, None)


def _count(text: str) -> tuple[int | None, str]:
    for pattern in (_KV_COUNT, _TRAILING):
        m = pattern.search(text.lower())
        if m:
            return int(m.group(1)), text[:m.start()].rstrip("-_:,;/ (") or text
    return None, text


def _from_mapping(text: str, spec: dict[str, Any]) -> PerturbationInfo:
    name = str(spec.get("name") or spec.get("kind") or spec.get("method") or "")
    if not name:
        name = "-".join(str(spec[k]) for k in ("selector", "edit", "strategy") if k in spec)
    count = next((int(spec[k]) for k in _COUNT_KEYS
                  if isinstance(spec.get(k), int) and not isinstance(spec.get(k), bool)), None)
    where = str(spec.get("position") or spec.get("where") or "").lower()
    if where in _POSITIONS:
        return PerturbationInfo(text, f"remove-{_POSITIONS[where]}", count or 1,
                                _POSITIONS[where])
    inner = parse_label(name) if name else PerturbationInfo(text, text)
    if inner.position is not None:
        return PerturbationInfo(text, inner.family, count or inner.count, inner.position)
    rest = {k: v for k, v in spec.items()
            if k not in (*_COUNT_KEYS, "name", "kind", "method", "selector", "edit", "strategy")}
    family = name + ("" if not rest else " " + json.dumps(rest, sort_keys=True))
    return PerturbationInfo(text, family or text, count, None)
