"""JSON Schema (draft 2020-12) of a configuration class, for editors and the documentation.

Read from the same declarations the configuration convention checks (:mod:`recaudit.config`):
each field's annotation gives its type (``int`` → integer, ``float`` → number, ``bool``,
``str``, ``Literal[...]`` → ``enum``, ``X | None``, ``tuple[...]`` → array, mappings → object,
nested configs → ``$defs``), its default, and the class docstring its description; unknown keys
are refused (``additionalProperties: false``), as :meth:`~recaudit.config.Config.from_dict`
refuses them. A config with a shorthand (``ModelSpec``: ``"gru4rec"``) also accepts the string.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Mapping
from typing import Any, Literal

from recaudit.config import Config, _hints, field_docs, plain

__all__ = ["json_schema"]


def json_schema(cls: type[Config], title: str | None = None) -> dict[str, Any]:
    """The JSON Schema of ``cls`` (a :class:`~recaudit.config.Config` dataclass)."""
    defs: dict[str, Any] = {}
    root = _object(cls, defs)
    schema = {"$schema": "https://json-schema.org/draft/2020-12/schema",
              "title": title or cls.__name__, **root}
    if defs:
        schema["$defs"] = defs
    return schema


def _object(cls: type[Config], defs: dict[str, Any]) -> dict[str, Any]:
    docs = field_docs(cls)
    hints = _hints(cls)
    props: dict[str, Any] = {}
    required = []
    for f in dataclasses.fields(cls):  # type: ignore[arg-type]
        prop = _type(hints[f.name], defs)
        if f.name in cls._also:
            prop = {"anyOf": [prop, dict(cls._also[f.name])]}
        if docs.get(f.name):
            prop["description"] = docs[f.name]
        if f.default is not dataclasses.MISSING:
            prop["default"] = plain(f.default)
        elif f.default_factory is not dataclasses.MISSING:
            prop["default"] = plain(f.default_factory())
        else:
            required.append(f.name)
        props[f.name] = prop
    out: dict[str, Any] = {"type": "object", "properties": props,
                           "additionalProperties": False}
    if required:
        out["required"] = required
    summary = (cls.__doc__ or "").strip().split("\n\n")[0]
    if summary:
        out["description"] = " ".join(summary.split())
    return out


def _type(tp: Any, defs: dict[str, Any]) -> dict[str, Any]:
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin in (typing.Union, types.UnionType):
        return {"anyOf": [_type(a, defs) for a in args]}
    if origin is Literal:
        return {"enum": list(args)}
    if tp is type(None):
        return {"type": "null"}
    if tp is bool:
        return {"type": "boolean"}
    if tp is int:
        return {"type": "integer"}
    if tp is float:
        return {"type": "number"}
    if tp is str:
        return {"type": "string"}
    if origin in (tuple, list):
        if len(args) == 2 and args[1] is Ellipsis:
            return {"type": "array", "items": _type(args[0], defs)}
        if args:
            return {"type": "array", "prefixItems": [_type(a, defs) for a in args],
                    "minItems": len(args), "maxItems": len(args)}
        return {"type": "array"}
    if (origin is not None and isinstance(origin, type) and issubclass(origin, Mapping)) \
            or tp in (dict, Mapping):
        return {"type": "object"}
    if isinstance(tp, type) and issubclass(tp, Config):
        if tp.__name__ not in defs:
            defs[tp.__name__] = {}  # a placeholder first: configs may nest themselves
            defs[tp.__name__] = _object(tp, defs)
        ref = {"$ref": f"#/$defs/{tp.__name__}"}
        return {"anyOf": [ref, {"type": "string"}]} if tp._shorthand else ref
    return {}
