"""Models discoverable by name: ``create("sasrec", epochs=5)``; paper presets by
``model@paper`` (``create("lstm@oh2022")``, see :mod:`recaudit.models._presets`)."""

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
    if "@" in name:
        from recaudit.models._presets import preset

        name = preset(name).model
    if name not in _REGISTRY:
        raise ConfigError(f"unknown model {name!r}; available: {', '.join(available())}."
                          + did_you_mean(name, _REGISTRY))
    return _REGISTRY[name]


def create(name: str, **params: Any) -> Any:
    """Instantiate the model registered as ``name`` with ``params`` (validated by its
    constructor: unknown or ill-typed parameters are a :class:`ConfigError`).

    ``name`` may be a preset ``model@paper``: its parameters, overridden by ``params``.
    """
    if "@" in name:
        from recaudit.models._presets import preset

        p = preset(name)
        return create(p.model, **{**p.params, **params})
    return model_class(name)(**params)
