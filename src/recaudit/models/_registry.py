"""Models discoverable by name: ``create("sasrec", epochs=5)``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from recaudit.errors import ConfigError, did_you_mean

__all__ = ["register", "create", "available", "model_class"]

_REGISTRY: dict[str, type] = {}


def register(name: str) -> Callable[[type], type]:
    """Class decorator: make a model creatable by ``name``.

    The class takes its configuration as keyword arguments, one per field of its
    :class:`~recaudit.config.Config` dataclass ``Model.Config``, and offers ``get_params()``
    (see :class:`~recaudit.models.Configurable`).
    """

    def deco(cls: type) -> type:
        if name in _REGISTRY and _REGISTRY[name] is not cls:
            raise ValueError(f"model name {name!r} registered twice")
        _REGISTRY[name] = cls
        setattr(cls, "registered_name", name)  # noqa: B010 - any class may be registered
        return cls

    return deco


def available() -> list[str]:
    return sorted(_REGISTRY)


def model_class(name: str) -> type:
    if name not in _REGISTRY:
        raise ConfigError(f"unknown model {name!r}; available: {', '.join(available())}."
                          + did_you_mean(name, _REGISTRY))
    return _REGISTRY[name]


def create(name: str, **params: Any) -> Any:
    """Instantiate the model registered as ``name`` with ``params`` (validated by its
    constructor: unknown or ill-typed parameters are a :class:`ConfigError`)."""
    return model_class(name)(**params)
