"""Models discoverable by name: ``create("sasrec", epochs=5)``; paper presets by
``model@paper`` (``create("lstm@oh2022")``, see :mod:`recaudit.models._presets`)."""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Callable
from typing import Any

from recaudit.errors import ConfigError, ModelError, RecauditError, did_you_mean

__all__ = ["register", "create", "available", "config_class", "model_class", "parameters"]

_REGISTRY: dict[str, type] = {}

#: Built-in models imported on first use of their name, ``name -> "module:Class"``: importing
#: the package imports none of them (torch, numba, scipy.sparse load with the model that needs
#: them); ``tests/models/test_lazy_torch.py`` checks that each class is registered under the
#: name listed here.
_DEFERRED: dict[str, str] = {
    "bert4rec": "recaudit.models.sequential:BERT4Rec",
    "gru4rec": "recaudit.models.sequential:GRU4Rec",
    "jodie": "recaudit.models.sequential:JODIE",
    "latentcross": "recaudit.models.sequential:LatentCross",
    "lstm": "recaudit.models.sequential:LSTM",
    "sasrec": "recaudit.models.sequential:SASRec",
    "tisasrec": "recaudit.models.sequential:TiSASRec",
    "funksvd": "recaudit.models._cf:FunkSVD",
    "item-item": "recaudit.models._cf:ItemKNN",
    "slope-one": "recaudit.models._cf:SlopeOne",
    "user-user": "recaudit.models._cf:UserKNN",
    "command": "recaudit.models._adapters:CommandModel",
    "implicit-als": "recaudit.models._adapters:ImplicitALS",
    "implicit-bpr": "recaudit.models._adapters:ImplicitBPR",
    "implicit-item-knn": "recaudit.models._adapters:ImplicitItemKNN",
    "lenskit-biased-mf": "recaudit.models._adapters:LensKitBiasedMF",
    "lenskit-implicit-mf": "recaudit.models._adapters:LensKitImplicitMF",
    "lenskit-item-knn": "recaudit.models._adapters:LensKitItemKNN",
    "lenskit-user-knn": "recaudit.models._adapters:LensKitUserKNN",
    "lightfm": "recaudit.models._adapters:LightFM",
    "recbole": "recaudit.models._adapters:RecBoleModel",
}

#: The options (``Model.Config``) of deferred models that live apart from the model, without
#: torch: :func:`config_class` reads them without importing the model.
_CONFIGS: dict[str, str] = {
    "bert4rec": "recaudit.models.sequential:BERT4RecConfig",
    "gru4rec": "recaudit.models.sequential:GRU4RecConfig",
    "jodie": "recaudit.models.sequential:JODIEConfig",
    "latentcross": "recaudit.models.sequential:LatentCrossConfig",
    "lstm": "recaudit.models.sequential:LSTMConfig",
    "sasrec": "recaudit.models.sequential:SASRecConfig",
    "tisasrec": "recaudit.models.sequential:TiSASRecConfig",
}


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
    return sorted(set(_REGISTRY) | set(_DEFERRED))


def _load(target: str) -> type:
    """The class ``module:Class`` of a built-in (imported now)."""
    import importlib

    module, _, attr = target.partition(":")
    return getattr(importlib.import_module(module), attr)


def _registered(name: str) -> type | None:
    """The class registered as ``name``, importing it first if it is deferred (registered
    again if a registry was reset after its module was imported)."""
    if name not in _REGISTRY and name in _DEFERRED:
        _REGISTRY.setdefault(name, _load(_DEFERRED[name]))
    return _REGISTRY.get(name)


#: The entry-point group through which a package offers models (``name = "pkg.mod:Class"``).
ENTRY_POINTS = "recaudit.models"


def _import(target: str, name: str) -> type:
    """The class ``package.module:Class`` names (``name``: what the user wrote)."""
    import importlib

    module, _, attr = target.partition(":")
    try:
        mod = importlib.import_module(module)
    except ImportError as exc:
        raise ConfigError(f"model {name!r}: cannot import module {module!r} ({exc})",
                          hint="install the package, or put its folder on PYTHONPATH") from None
    cls = getattr(mod, attr, None)
    if not isinstance(cls, type):
        raise ConfigError(f"model {name!r}: module {module!r} has no class {attr!r}")
    missing = [m for m in ("fit", "rank") if not callable(getattr(cls, m, None))]
    if missing:
        raise ConfigError(f"model {name!r}: class {attr} has no {' or '.join(missing)} "
                          "method", hint=_PROTOCOL)
    for method, argument in (("fit", "seed"), ("rank", "k")):
        if not _takes(getattr(cls, method), argument):
            raise ConfigError(f"model {name!r}: {attr}.{method} takes no argument "
                              f"{argument!r}", hint=_PROTOCOL)
    return cls


_PROTOCOL = "a model needs fit(self, train, *, seed) and rank(self, queries, k=None)"


def _takes(method: Any, argument: str) -> bool:
    """Whether ``method`` can be called with keyword ``argument`` (unknown: yes)."""
    try:
        params = inspect.signature(method).parameters
    except (TypeError, ValueError):  # a builtin or C method: cannot tell
        return True
    return argument in params and params[argument].kind not in (
        inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.VAR_POSITIONAL) or any(
        p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())


def _entry_point(name: str) -> str | None:
    from importlib.metadata import entry_points

    for ep in entry_points(group=ENTRY_POINTS):
        if ep.name == name:
            return str(ep.value)
    return None


def model_class(name: str) -> type:
    """The class of a model: a registered name, a preset ``model@paper``, a class
    ``package.module:Class`` (any class with ``fit(train, *, seed)`` and ``rank(queries,
    k)``; its parameters are constructor keywords), or a name a package offers through the
    ``recaudit.models`` entry-point group."""
    if "@" in name:
        from recaudit.models._presets import preset

        name = preset(name).model
    if ":" in name:
        return _import(name, name)
    cls = _registered(name)
    if cls is None:
        target = _entry_point(name)
        if target is not None:
            return _import(target, name)
        raise ConfigError(f"unknown model {name!r}; available: {', '.join(available())}, "
                          "or a class as 'package.module:Class'."
                          + did_you_mean(name, available()))
    return cls


def config_class(name: str) -> type | None:
    """The options class (``Model.Config``) of a model (any name :func:`model_class` accepts;
    ``None`` for a class without one). A built-in sequential model's is read without
    importing the model, and so without torch: a configuration's model and parameters are
    checked before anything that trains one is imported."""
    base = name
    if "@" in name:
        from recaudit.models._presets import preset

        base = preset(name).model
    if base not in _REGISTRY and base in _CONFIGS:
        return _load(_CONFIGS[base])
    return getattr(model_class(name), "Config", None)


def create(name: str, **params: Any) -> Any:
    """Instantiate the model registered as ``name`` with ``params`` (validated by its
    constructor: unknown or ill-typed parameters are a :class:`ConfigError`).

    ``name`` may be a preset ``model@paper``: its parameters, overridden by ``params``. A
    constructor of a class named ``package.module:Class`` (or offered by a package) that
    rejects the parameters is a :class:`ConfigError`; one that fails otherwise a
    :class:`~recaudit.errors.ModelError` (its exception the cause).
    """
    if "@" in name:
        from recaudit.models._presets import preset

        p = preset(name)
        return create(p.model, **{**p.params, **params})
    cls = model_class(name)
    try:
        return cls(**params)
    except RecauditError:
        raise
    except TypeError as exc:
        if name in _REGISTRY:  # a built-in model's own error (model_class registered it)
            raise
        raise ConfigError(f"model {name!r}: {exc}", hint=f"its parameters: "
                          f"{cls.__name__}{inspect.signature(cls)}") from exc
    except Exception as exc:
        if name in _REGISTRY:
            raise
        raise ModelError(f"model {name!r} could not be built: {type(exc).__name__}: "
                         f"{' '.join(str(exc).split())}") from exc


def parameters(name: str) -> list[tuple[str, str, str]]:
    """``(parameter, default, documentation)`` of a model (any name :func:`model_class`
    accepts), from its ``Config`` dataclass, or its constructor's signature when it has none
    (``default`` is ``"required"`` for a parameter without one)."""
    from recaudit.config import field_docs

    cls = model_class(name)
    config = getattr(cls, "Config", None)
    if config is not None and dataclasses.is_dataclass(config):
        docs = field_docs(config)  # type: ignore[arg-type]
        out = []
        for f in dataclasses.fields(config):
            if f.default is not dataclasses.MISSING:
                default = repr(f.default)
            elif f.default_factory is not dataclasses.MISSING:
                default = repr(f.default_factory())
            else:
                default = "required"
            out.append((f.name, default, docs.get(f.name, "")))
        return out
    sig = inspect.signature(cls)
    return [(p.name, "required" if p.default is inspect.Parameter.empty else repr(p.default), "")
            for p in sig.parameters.values() if p.kind is not p.VAR_KEYWORD]
