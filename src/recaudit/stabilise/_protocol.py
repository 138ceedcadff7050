"""Stabilisation methods by name: the protocol further methods plug into.

A method turns a way to build a model into a *stabilised* model that behaves like any
:class:`~recaudit.models.Recommender` (``fit``, ``score``, ``rank``, ``get_params``). It is
registered once with :func:`register_method` under a name, with a frozen
:class:`~recaudit.config.Config` class for its options and a ``wrap(make, config)`` function
(``make()`` builds a fresh, unfitted model of the spec being stabilised)::

    @dataclass(frozen=True)
    class MyConfig(Config):
        \"\"\"strength: how much to smooth.\"\"\"
        strength: float = 1.0

    register_method("smooth", MyConfig, lambda make, cfg: Smoothed(make(), cfg),
                    summary="...")

after which a model table of an audit may say ``stabilise = {method = "smooth",
strength = 2.0}``. A stabilised model whose class sets ``uses_anchor = True`` also receives
``anchor=`` (:class:`Anchor`) in ``fit``: the training data and seed of the *unperturbed*
model of the same trial (the "deployed" model whose lists it should keep), and a cache
directory shared by the trials of an audit.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from recaudit.config import Config
from recaudit.data import Interactions
from recaudit.errors import ConfigError, did_you_mean

__all__ = ["Anchor", "Method", "register_method", "methods", "method", "parse", "stabilise"]


@dataclass(frozen=True)
class Anchor:
    """What a ``uses_anchor`` model may read besides its own training data.

    ``train``: the unperturbed training log of the trial; ``seed``: the training seed of the
    unperturbed model; ``cache_dir``: a directory shared by the trials of an audit (``None``:
    no disk cache), where a method may keep what it derives from ``(train, seed)``.
    """

    train: Interactions
    seed: int
    cache_dir: Path | None = None


@dataclass(frozen=True)
class Method:
    """A registered method: ``name``, its options class ``config``, ``wrap(make, config)``
    building the stabilised model, and a one-line ``summary`` citing its source."""

    name: str
    config: type[Config]
    wrap: Callable[[Callable[[], Any], Any], Any]
    summary: str = ""


_METHODS: dict[str, Method] = {}


def register_method(name: str, config: type[Config],
                    wrap: Callable[[Callable[[], Any], Any], Any], *, summary: str = "") -> None:
    """Make ``stabilise = {method = name, ...}`` available (names are unique)."""
    if name in _METHODS and _METHODS[name].wrap is not wrap:
        raise ValueError(f"stabilisation method {name!r} is registered twice")
    _METHODS[name] = Method(name, config, wrap, summary)


def methods() -> list[str]:
    """Names of the registered methods (the built-in ones register when
    :mod:`recaudit.stabilise` is imported, which importing this module does first)."""
    return sorted(_METHODS)


def method(name: str) -> Method:
    """The method registered as ``name`` (:class:`ConfigError` naming the closest one)."""
    if name not in _METHODS:
        raise ConfigError(f"unknown stabilisation method {name!r}; available: "
                          f"{', '.join(sorted(_METHODS))}.{did_you_mean(name, _METHODS)}",
                          key="method")
    return _METHODS[name]


def parse(spec: Mapping[str, Any]) -> tuple[Method, Config]:
    """``{"method": name, **options}`` as the method and its validated options; errors are
    :class:`ConfigError` naming the key (``method``, or the option)."""
    if not isinstance(spec, Mapping):
        raise ConfigError(f"expected a table such as {{method = \"finest\"}}, got "
                          f"{type(spec).__name__} {spec!r}")
    if "method" not in spec:
        raise ConfigError(f"missing required key 'method' (one of {', '.join(methods())})",
                          key="method")
    name = spec["method"]
    if not isinstance(name, str):
        raise ConfigError(f"expected a string, got {type(name).__name__} {name!r}", key="method")
    m = method(name)
    options = {k: v for k, v in spec.items() if k != "method"}
    return m, m.config.from_dict(options, what=f"stabilisation method {name!r}", noun="option")


def stabilise(make: Callable[[], Any], spec: Mapping[str, Any]) -> Any:
    """The stabilised model of ``spec`` around the models ``make()`` builds."""
    m, config = parse(spec)
    return m.wrap(make, config)


def maker(model: str | Callable[[], Any], params: Mapping[str, Any] | None) -> Callable[[], Any]:
    """``make()`` for a wrapper's ``model`` argument: a registered name (with ``params``) or a
    factory of unfitted models."""
    if isinstance(model, str):
        from recaudit.models import create

        fixed = dict(params or {})
        return lambda: create(model, **fixed)
    if params:
        raise TypeError("params go with a model name; a factory builds its own models")
    if not callable(model):
        raise TypeError(f"model must be a registered name or a factory, got {model!r}")
    return model


def options(cls: type[Config], name: str, stabilise: Config | Mapping[str, Any] | None,
            extra: Mapping[str, Any]) -> Any:
    """A wrapper's options: a ``cls`` instance, or ``{"method": name, ...}`` and keywords."""
    if isinstance(stabilise, cls):
        if extra:
            raise TypeError("give options either as a config or as keywords")
        return stabilise
    spec = {"method": name, **dict(stabilise if isinstance(stabilise, Mapping) else {}),
            **extra}
    m, config = parse(spec)
    if m.name != name:
        raise ConfigError(f"this wrapper is method {name!r}, not {m.name!r}", key="method")
    return config
