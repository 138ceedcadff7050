"""Perturbation families by name prefix: :func:`register_family`, :func:`parse`.

A name without a colon belongs to the built-in family (``"random-delete"``,
``"remove-end-5"``); ``"<prefix>:<rest>"`` to the family registered under ``prefix``
(``"fuzz:AMR:10"`` is :mod:`recaudit.fuzz`'s). Families register themselves when their module
is imported. A prefix not registered yet is looked up in the entry-point group
``recaudit.perturbations`` (``prefix = "package.module"``): the module is imported and must
register the prefix. recaudit declares its own ``fuzz`` there; other packages add theirs the same
way, without changing recaudit.
"""

from __future__ import annotations

import importlib
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from recaudit.errors import ConfigError, did_you_mean
from recaudit.perturb._protocol import Perturbation

__all__ = ["Entry", "Family", "register_family", "families", "parse", "available",
           "catalogue", "ENTRY_POINTS"]

log = logging.getLogger(__name__)

#: Entry-point group in which packages declare modules that register perturbation families.
ENTRY_POINTS = "recaudit.perturbations"


@dataclass(frozen=True)
class Family:
    """A family of perturbations: how to read its names and tables.

    prefix: the name prefix before ``:`` (``""`` for the built-in family). parse:
    ``parse(name, **overrides)``. from_dict: ``from_dict(fields)``, the inverse of the specs'
    ``to_dict``. examples: names for :func:`available` (``<n>`` stands for an integer).
    """

    prefix: str
    parse: Callable[..., Perturbation]
    from_dict: Callable[[Mapping[str, Any]], Perturbation]
    examples: Callable[[], list[str]]
    describe: Callable[[str], tuple[str, str]] | None = None
    title: str = ""


@dataclass(frozen=True)
class Entry:
    """One name of :func:`catalogue`: its ``family`` (the family's title), a one-line
    ``description`` and the ``parameters`` a table form of it may set (``""``: none)."""

    name: str
    family: str
    description: str
    parameters: str


_FAMILIES: dict[str, Family] = {}


def register_family(prefix: str, *, parse: Callable[..., Perturbation],
                    from_dict: Callable[[Mapping[str, Any]], Perturbation],
                    examples: Callable[[], list[str]],
                    describe: Callable[[str], tuple[str, str]] | None = None,
                    title: str = "") -> Family:
    """Register a family under ``prefix`` (idempotent for the same functions). ``describe``
    (optional): ``describe(example) -> (one-line description, parameters)`` for
    :func:`catalogue`; ``title``: the family's name there."""
    if ":" in prefix or prefix != prefix.strip().lower():
        raise ValueError(f"a family prefix is lower case without ':' or spaces, got {prefix!r}")
    family = Family(prefix, parse, from_dict, examples, describe, title)
    old = _FAMILIES.get(prefix)
    if old is not None and old != family:
        raise ValueError(f"perturbation family {prefix!r} is registered twice")
    _FAMILIES[prefix] = family
    return family


def _discover(prefix: str) -> None:
    """Import the entry point declared for ``prefix`` (it registers the family)."""
    from importlib.metadata import entry_points

    for ep in entry_points(group=ENTRY_POINTS):
        if ep.name == prefix:
            log.debug("loading perturbation family %r from %s", prefix, ep.value)
            importlib.import_module(ep.value.split(":", 1)[0])


def families() -> dict[str, Family]:
    """Every registered family by prefix (after loading the declared entry points)."""
    from importlib.metadata import entry_points

    for ep in entry_points(group=ENTRY_POINTS):
        if ep.name not in _FAMILIES:
            _discover(ep.name)
    return dict(_FAMILIES)


def _family(prefix: str) -> Family:
    if prefix not in _FAMILIES:
        _discover(prefix)
    if prefix not in _FAMILIES:
        known = sorted(p for p in families() if p)
        raise ConfigError(f"unknown perturbation family {prefix + ':'!r}.{did_you_mean(prefix, known)}"
                          f" Registered prefixes: {', '.join(p + ':' for p in known) or 'none'}",
                          hint="a family registers itself when its package is imported, or "
                               f"through the {ENTRY_POINTS!r} entry points of an installed "
                               "package (reinstall with pip install -e . after a change)")
    return _FAMILIES[prefix]


def parse(value: str | Mapping[str, Any] | Perturbation, **overrides: Any) -> Perturbation:
    """The perturbation ``value`` stands for.

    ``value`` is a name (``"casper-delete-k4"``, ``"fuzz:AMR:10"``), a table with a ``name``
    and overrides of other fields (``{name = "casper-delete", max_len = 50}``), a table of a
    spec's own fields (``to_dict()`` output; ``family`` names a registered prefix, default the
    built-in family) or a spec already. Errors are :class:`ConfigError` with the closest name.
    """
    if isinstance(value, Perturbation) and not overrides:
        return value
    if isinstance(value, str):
        prefix = value.split(":", 1)[0].strip().lower() if ":" in value else ""
        return _family(prefix).parse(value, **overrides)
    if isinstance(value, Mapping):
        fields = {**value, **overrides}
        if "name" in fields:
            return parse(str(fields.pop("name")), **fields)
        return _family(str(fields.pop("family", ""))).from_dict(fields)
    raise ConfigError(f"a perturbation is a name or a table, got {type(value).__name__} "
                      f"{value!r}")


def available() -> list[str]:
    """Example names of every family (``<n>`` stands for a positive integer)."""
    out: list[str] = []
    for _, family in sorted(families().items()):
        out += family.examples()
    return out


def catalogue() -> list[Entry]:
    """Every example name of :func:`available` with its family, a one-line description and
    its parameters (what a family registered without ``describe`` leaves blank)."""
    out: list[Entry] = []
    for prefix, family in sorted(families().items()):
        for name in family.examples():
            text, params = family.describe(name) if family.describe else ("", "")
            out.append(Entry(name, family.title or prefix or "built-in", text, params))
    return out
