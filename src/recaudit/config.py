"""One configuration convention for models, specs, studies and scenarios.

A configuration is a frozen dataclass deriving from :class:`Config`:

- **typed and validated at construction**: every field is checked against its annotation
  (``int``, ``float``, ``bool``, ``str``, ``X | None``, ``Literal[...]``, ``tuple[...]``,
  mappings and nested configs) and normalised (numpy integers become ``int``, lists become
  tuples, tables become nested configs); then :meth:`Config.validate` checks values. Every
  problem is a :class:`~recaudit.errors.ConfigError` naming the key;
- **documented per field**: the class docstring says ``name: what it is`` for every field
  (inline, ``a: ... b: ...``, or one per line); :meth:`Config.field_docs` reads it back and the
  test-suite checks that no field is undocumented;
- **round-trips**: :meth:`Config.from_dict` builds one from plain data (unknown keys are errors
  with the closest valid key), :meth:`Config.to_dict` gives that plain data back, and
  :meth:`Config.from_toml` reads a TOML file, adding file and line to every error.
"""

from __future__ import annotations

import dataclasses
import re
import tomllib
import types
import typing
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar, Literal

import numpy as np

from recaudit.errors import ConfigError, did_you_mean

__all__ = ["Config", "field_docs", "plain", "read_toml"]

T = typing.TypeVar("T", bound="Config")


def plain(value: Any) -> Any:
    """``value`` as JSON-ready data: configs and mappings to dicts, tuples/sets to lists, numpy
    scalars to Python numbers."""
    if isinstance(value, Config):
        return value.to_dict()
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, Mapping):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (tuple, list)):
        return [plain(v) for v in value]
    if isinstance(value, (set, frozenset)):
        return sorted(plain(v) for v in value)
    if isinstance(value, np.generic):
        return value.item()
    return value


_HINTS: dict[type, dict[str, Any]] = {}


def _hints(cls: type) -> dict[str, Any]:
    """The resolved field annotations of ``cls`` (computed once per class)."""
    if cls not in _HINTS:
        _HINTS[cls] = typing.get_type_hints(cls)
    return _HINTS[cls]


def _type_name(tp: Any) -> str:
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        return " or ".join(_type_name(a) for a in typing.get_args(tp))
    if origin is Literal:
        return "one of " + ", ".join(repr(a) for a in typing.get_args(tp))
    if tp is type(None):
        return "None"
    if origin in (tuple, list):
        return "a list"
    if origin is not None and isinstance(origin, type) and issubclass(origin, Mapping):
        return "a table"
    name = getattr(tp, "__name__", str(tp))
    return {"int": "an integer", "float": "a number", "bool": "true or false",
            "str": "a string"}.get(name, name)


class _Mismatch(Exception):
    """Internal: a value does not fit a type."""


def _coerce(value: Any, tp: Any, key: str) -> Any:
    """``value`` checked against ``tp`` and normalised; :class:`_Mismatch` if it does not fit.

    ``key`` is the path of ``value`` below the field (``""``, ``"[2]"``), for nested errors."""
    origin = typing.get_origin(tp)
    if tp is Any or tp is object:
        return value
    if origin in (typing.Union, types.UnionType):
        for arg in typing.get_args(tp):
            try:
                return _coerce(value, arg, key)
            except _Mismatch:
                continue
        raise _Mismatch
    if tp is type(None):
        if value is None:
            return None
        raise _Mismatch
    if origin is Literal:
        if any(value == a and type(value) is type(a) for a in typing.get_args(tp)):
            return value
        raise _Mismatch
    if tp is bool:
        if isinstance(value, (bool, np.bool_)):
            return bool(value)
        raise _Mismatch
    if tp is int:
        if isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_)):
            return int(value)
        raise _Mismatch
    if tp is float:
        if isinstance(value, (int, float, np.integer, np.floating)) \
                and not isinstance(value, (bool, np.bool_)):
            return float(value)
        raise _Mismatch
    if tp is str:
        if isinstance(value, str):
            return str(value)
        raise _Mismatch
    if origin in (tuple, list):
        if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, (tuple, list)):
            raise _Mismatch
        args = typing.get_args(tp)
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(_coerce(v, args[0], f"[{i}]") for i, v in enumerate(value))
        if args and len(args) == len(value):
            return tuple(_coerce(v, a, f"[{i}]") for i, (v, a) in
                         enumerate(zip(value, args, strict=True)))
        if args:
            raise _Mismatch
        return tuple(value)
    if (origin is not None and isinstance(origin, type) and issubclass(origin, Mapping)) \
            or tp in (dict, Mapping):
        if not isinstance(value, Mapping):
            raise _Mismatch
        return dict(value)
    if isinstance(tp, type) and issubclass(tp, Config):
        if isinstance(value, tp):
            return value
        if isinstance(value, Mapping) or (isinstance(value, str) and tp._shorthand):
            return tp.from_dict(value, key=key or None)
        raise _Mismatch
    if isinstance(tp, type):
        if isinstance(value, tp):
            return value
        raise _Mismatch
    return value


class Config:
    """Base of every configuration dataclass (see the module docstring).

    Subclasses are ``@dataclass(frozen=True)`` classes; they override :meth:`validate` for value
    checks (calling ``super().validate()``) and may set ``_shorthand`` to the field a bare
    string stands for (``ModelSpec``: ``"gru4rec"`` means ``{"name": "gru4rec"}``).
    """

    _shorthand: ClassVar[str | None] = None
    #: Other forms :meth:`_normalise` accepts for a field, as JSON Schemas (the JSON Schema of
    #: the config lists them beside the field's own type).
    _also: ClassVar[Mapping[str, Mapping[str, Any]]] = {}

    def __post_init__(self) -> None:
        hints = _hints(type(self))
        for f in dataclasses.fields(self):  # type: ignore[arg-type]
            value = getattr(self, f.name)
            try:
                fixed = _coerce(value, hints[f.name], "")
            except _Mismatch:
                tp = hints[f.name]
                hint = ""
                if typing.get_origin(tp) is Literal and isinstance(value, str):
                    hint = did_you_mean(value, [str(a) for a in typing.get_args(tp)])
                raise ConfigError(f"expected {_type_name(tp)}, got {type(value).__name__} "
                                  f"{value!r}.{hint}".rstrip("."), key=f.name) from None
            except ConfigError as exc:  # a nested config: prefix its key with this field
                inner = exc.key or ""
                full = f.name + (inner if inner.startswith("[") or not inner else "." + inner)
                raise ConfigError(exc.message, key=full, hint=exc.hint) from None
            if fixed is not value:
                object.__setattr__(self, f.name, fixed)
        self.validate()

    def validate(self) -> None:
        """Check values (types are already checked); raise :meth:`invalid` errors."""

    @staticmethod
    def invalid(key: str, message: str, hint: str | None = None) -> ConfigError:
        """The error for field ``key`` (raise it from :meth:`validate`)."""
        return ConfigError(message, key=key, hint=hint)

    # ------------------------------------------------------------------ conversions
    @classmethod
    def from_dict(cls: type[T], data: Mapping[str, Any] | str, *, key: str | None = None,
                  what: str | None = None, noun: str = "key") -> T:
        """Build from plain data. Unknown keys raise :class:`ConfigError` with the closest
        valid key; ``key`` prefixes the keys named in errors (the section of a file), ``what``
        and ``noun`` name the owner in the unknown-key message (``"model 'sasrec' has no
        parameter 'lr_'"``)."""
        if isinstance(data, str) and cls._shorthand:
            data = {cls._shorthand: data}
        if not isinstance(data, Mapping):
            raise ConfigError(f"expected a table, got {type(data).__name__} {data!r}", key=key)
        try:
            data = cls._normalise(dict(data))
        except ConfigError as exc:  # a shorthand's error names its key below ``key``
            if key is None:
                raise
            raise ConfigError(exc.message, key=f"{key}.{exc.key}" if exc.key else key,
                              hint=exc.hint) from None
        fields = dataclasses.fields(cls)  # type: ignore[arg-type]
        valid = [f.name for f in fields]
        for name in data:
            if name not in valid:
                owner = what or cls.__name__
                hint = did_you_mean(str(name), valid) or ""
                raise ConfigError(f"{owner} has no {noun} {name!r}.{hint} Valid: "
                                  f"{', '.join(valid)}",
                                  key=f"{key}.{name}" if key else str(name))
        for f in fields:
            if f.name not in data and f.default is dataclasses.MISSING \
                    and f.default_factory is dataclasses.MISSING:
                raise ConfigError(f"missing required key {f.name!r}",
                                  key=f"{key}.{f.name}" if key else f.name)
        try:
            return cls(**data)
        except ConfigError as exc:
            if key is None:
                raise
            inner = exc.key
            raise ConfigError(exc.message, key=f"{key}.{inner}" if inner else key,
                              hint=exc.hint) from None

    @classmethod
    def _normalise(cls, data: dict[str, Any]) -> dict[str, Any]:
        """Hook: rewrite shorthand forms before validation (default: unchanged)."""
        return data

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready data; ``type(self).from_dict(self.to_dict()) == self``."""
        return {f.name: plain(getattr(self, f.name))
                for f in dataclasses.fields(self)}  # type: ignore[arg-type]

    def replace(self: T, **changes: Any) -> T:
        """A copy with ``changes`` applied (validated like a new config)."""
        return dataclasses.replace(self, **changes)  # type: ignore[type-var]

    @classmethod
    def from_toml(cls: type[T], path: str | Path) -> T:
        """Read and validate a TOML file; errors name the file, the line and the key."""
        data, text = read_toml(path)
        try:
            return cls.from_dict(data)
        except ConfigError as exc:
            raise exc.located(source=str(path), line=_line_of(text, exc.key)) from None

    @classmethod
    def field_docs(cls) -> dict[str, str]:
        """``{field: documentation}`` read from the class docstrings (see :func:`field_docs`)."""
        return field_docs(cls)


def read_toml(path: str | Path) -> tuple[dict[str, Any], str]:
    """``(data, text)`` of a TOML file; unreadable or invalid files are :class:`ConfigError`."""
    path = Path(path)
    try:
        text = path.read_text()
    except OSError as exc:
        raise ConfigError(f"cannot read config {path}: {exc.strerror}",
                          hint="check the path") from None
    try:
        return tomllib.loads(text), text
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: invalid TOML: {exc}") from None


def _line_of(text: str, key: str | None) -> int | None:
    """1-based line where dotted ``key`` (``"models[1].params.epochs"``) is written, if found."""
    if not key:
        return None
    parts = [p for p in re.split(r"\.(?![^\[]*\])", key) if p]
    lines = text.splitlines()
    start = 0
    for depth, part in enumerate(parts):
        m = re.fullmatch(r"(.+?)\[(\d+)\]", part)
        name, index = (m.group(1), int(m.group(2))) if m else (part, 0)
        last = depth == len(parts) - 1
        header = re.compile(r"^\s*\[\[?\s*" + re.escape(name) + r"\s*\]\]?\s*$")
        assign = re.compile(r"(^|[\s{,])\"?" + re.escape(name) + r"\"?\s*=")
        seen = -1
        found = None
        for i in range(start, len(lines)):
            if header.match(lines[i]) or (assign.search(lines[i]) and (last or not m)):
                seen += 1
                if seen == index:
                    found = i
                    break
        if found is None:
            return None if depth == 0 else start + 1
        start = found
    return start + 1


def field_docs(cls: type) -> dict[str, str]:
    """Per-field documentation of a dataclass, read from the docstrings of its class hierarchy.

    A field's text starts at ``name:`` (at the start of a line or after a sentence) and runs to
    the next ``other_field:`` or blank line. Fields without text map to ``""``.
    """
    names = [f.name for f in dataclasses.fields(cls)]
    docs: dict[str, str] = {}
    pattern = re.compile(r"(?:^|(?<=[\s.;]))(" + "|".join(map(re.escape, names)) + r"):\s",
                         re.M) if names else None
    for klass in cls.__mro__:
        doc = klass.__dict__.get("__doc__") or ""
        if not doc or pattern is None:
            continue
        for block in re.split(r"\n\s*\n", doc):
            hits = list(pattern.finditer(block))
            for j, m in enumerate(hits):
                end = hits[j + 1].start() if j + 1 < len(hits) else len(block)
                text = " ".join(block[m.end():end].split())
                docs.setdefault(m.group(1), text)
    return {n: docs.get(n, "") for n in names}
