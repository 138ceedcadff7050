"""Audit configuration files (TOML) validated into :class:`AuditConfig`.

Example::

    name = "quick"
    output = "quick.duckdb"
    seeds = [0, 1, 2]
    perturbations = ["random-delete", "casper-delete"]

    [[datasets]]
    name = "synthetic"
    options = { n_users = 300 }

    [[models]]
    name = "gru4rec"
    params = { epochs = 5 }

    [metrics]
    k = 10

    [executor]
    kind = "process"
    workers = 2

Every unknown key, wrong type or impossible value is a :class:`~recaudit.errors.ConfigError`
naming the key, the file and line, and the closest valid key.
"""

from __future__ import annotations

import dataclasses
import json
import re
import tomllib
import types
import typing
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from recaudit.audit._spec import (
    AuditConfig,
    DatasetSpec,
    ExecutorSpec,
    MetricSpec,
    ModelSpec,
    SplitSpec,
    canonical_json,
)
from recaudit.errors import ConfigError, did_you_mean

__all__ = ["load_config", "config_from_dict", "config_to_dict"]

_SECTIONS = {"split": SplitSpec, "metrics": MetricSpec, "executor": ExecutorSpec}
_LISTS = {"datasets": DatasetSpec, "models": ModelSpec}


class _Where:
    """Locates keys in the TOML source to report line numbers."""

    def __init__(self, text: str | None, source: str) -> None:
        self.lines = text.splitlines() if text else []
        self.source = source

    def line(self, key: str, section: str | None = None) -> int | None:
        start = 0
        if section:
            pat = re.compile(r"^\s*\[\[?\s*" + re.escape(section) + r"\s*\]\]?\s*$")
            for i, ln in enumerate(self.lines):
                if pat.match(ln):
                    start = i
                    break
        pat = re.compile(r"(^|[\s{,])\"?" + re.escape(key) + r"\"?\s*=")
        for i in range(start, len(self.lines)):
            if pat.search(self.lines[i]):
                return i + 1
        return None

    def error(self, msg: str, key: str, section: str | None = None) -> ConfigError:
        line = self.line(key, section)
        where = self.source + (f", line {line}" if line else "")
        full = f"{section}.{key}" if section else key
        return ConfigError(f"{where}: key {full!r}: {msg}")


def _check_type(value: Any, tp: Any) -> bool:
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        return any(_check_type(value, a) for a in typing.get_args(tp))
    if tp is type(None):
        return value is None
    if tp is Any:
        return True
    if tp is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if tp is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if origin in (tuple, list):
        return isinstance(value, (list, tuple))
    if origin is not None and issubclass(origin, Mapping) or tp is Mapping:
        return isinstance(value, Mapping)
    if isinstance(tp, type):
        return isinstance(value, tp)
    return True


def _build(cls: type, data: Any, where: _Where, section: str) -> Any:
    if isinstance(data, str) and cls in (DatasetSpec, ModelSpec):
        data = {"name": data}
    if not isinstance(data, Mapping):
        raise where.error(f"expected a table, got {type(data).__name__}", section)
    hints = typing.get_type_hints(cls)
    valid = [f.name for f in dataclasses.fields(cls)]
    for key, value in data.items():
        if key not in valid:
            hint = did_you_mean(key, valid) or f" Valid keys: {', '.join(valid)}."
            raise where.error("unknown key." + hint, key, section)
        if not _check_type(value, hints[key]):
            raise where.error(f"expected {_type_name(hints[key])}, got {type(value).__name__} "
                              f"{value!r}", key, section)
    try:
        return cls(**data)
    except ConfigError as exc:
        key = next((k for k in data if k in str(exc)), None)
        if key is not None:
            raise where.error(str(exc), key, section) from None
        raise ConfigError(f"{where.source}: [{section}]: {exc}") from None
    except TypeError as exc:
        raise ConfigError(f"{where.source}: [{section}]: {exc}") from None


def _type_name(tp: Any) -> str:
    return getattr(tp, "__name__", None) or str(tp).replace("typing.", "")


def config_from_dict(data: Mapping[str, Any], *, source: str = "<config>",
                     text: str | None = None) -> AuditConfig:
    """Validate a parsed TOML/JSON mapping into an :class:`AuditConfig`."""
    where = _Where(text, source)
    valid = [f.name for f in dataclasses.fields(AuditConfig)]
    kwargs: dict[str, Any] = {}
    for key, value in data.items():
        if key not in valid:
            hint = did_you_mean(key, valid) or f" Valid keys: {', '.join(valid)}."
            raise where.error("unknown key." + hint, key)
        if key in _SECTIONS:
            kwargs[key] = _build(_SECTIONS[key], value, where, key)
        elif key in _LISTS:
            items = value if isinstance(value, list) else [value]
            kwargs[key] = tuple(_build(_LISTS[key], v, where, key) for v in items)
        elif key == "seeds":
            if isinstance(value, int) and not isinstance(value, bool):
                value = list(range(value))
            if not isinstance(value, list) or not all(isinstance(s, int) for s in value):
                raise where.error("expected a list of integers (or a count)", key)
            kwargs[key] = tuple(value)
        elif key == "perturbations":
            items = value if isinstance(value, list) else [value]
            kwargs[key] = tuple(_perturbation(v, where) for v in items)
        else:
            if not isinstance(value, str):
                raise where.error(f"expected a string, got {type(value).__name__}", key)
            kwargs[key] = value
    if "models" not in kwargs:
        raise ConfigError(f"{source}: missing required key 'models' (e.g. [[models]] name = "
                          "\"gru4rec\")")
    try:
        return AuditConfig(**kwargs)
    except ConfigError as exc:
        raise ConfigError(f"{source}: {exc}") from None


def _perturbation(value: Any, where: _Where) -> Any:
    """Validate a perturbation entry; names are kept canonical, tables as given."""
    from recaudit.audit._runner import perturbation_spec

    try:
        spec = perturbation_spec(dict(value) if isinstance(value, Mapping) else value)
    except ConfigError as exc:
        raise where.error(str(exc), "perturbations") from None
    return spec.name if isinstance(value, str) else dict(value)


def load_config(path: str | Path) -> AuditConfig:
    """Read and validate a TOML audit configuration."""
    path = Path(path)
    try:
        text = path.read_text()
    except OSError as exc:
        raise ConfigError(f"cannot read config {path}: {exc.strerror}") from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: invalid TOML: {exc}") from None
    return config_from_dict(data, source=str(path), text=text)


def config_to_dict(config: AuditConfig) -> dict[str, Any]:
    """The inverse of :func:`config_from_dict` (round-trips)."""
    return json.loads(canonical_json(dataclasses.asdict(config)))
