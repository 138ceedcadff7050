"""``recaudit schema [audit|fuzz|properties|mirror]``: the JSON Schema of a config file."""

from __future__ import annotations

import json

import typer

__all__ = ["register"]

_KINDS = ("audit", "fuzz", "properties", "mirror")


def schema(kind: str = typer.Argument("audit", help="audit (recaudit run CONFIG), fuzz, "
                                                    "properties or mirror.")) -> None:
    """Print the JSON Schema of a configuration file (point your editor at it: keys, types,
    defaults and their documentation as you type)."""
    from recaudit._schema import json_schema
    from recaudit.errors import ConfigError, did_you_mean

    if kind not in _KINDS:
        raise ConfigError(f"unknown configuration {kind!r}; choose one of {', '.join(_KINDS)}."
                          + did_you_mean(kind, _KINDS))
    if kind == "audit":
        from recaudit.audit import AuditConfig as cls
    elif kind == "fuzz":
        from recaudit.fuzz import FuzzStudy as cls  # type: ignore[assignment]
    elif kind == "properties":
        from recaudit.properties import PropertyStudy as cls  # type: ignore[assignment]
    else:
        from recaudit.simulate import MirrorConfig as cls  # type: ignore[assignment]
    typer.echo(json.dumps(json_schema(cls, f"recaudit {kind} configuration"), indent=1))


def register(app: typer.Typer) -> None:
    app.command("schema")(schema)
