"""Reference pages generated from the code at build time, so they cannot drift from it.

A page holds a marker line ``<!-- reference: NAME -->``; on ``source-read`` the marker is
replaced by MyST Markdown generated from recaudit's own declarations:

- ``cli``: every command of ``recaudit`` (the typer application's commands) with
  its help, arguments and options (type, default, help);
- ``config``: every key of the four configuration files (audit, fuzz, properties, MIRROR)
  with type, default and documentation, from the JSON Schema the ``Config`` classes give;
- ``models``: every registered model with its parameters (from ``Model.Config``) and every
  paper preset with its parameters and documented differences from the paper's code;
- ``store``: every table a results store may hold with its key and columns (type, default,
  documentation), from the declared schemas.

Whatever lacks its documentation (a command, an option, a key, a model parameter, a store
column) is a Sphinx warning, and the build runs with warnings as errors.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from typing import Any

from sphinx.application import Sphinx
from sphinx.util import logging

logger = logging.getLogger(__name__)

_MARKER = re.compile(r"^<!-- reference: ([a-z]+) -->$", re.M)


def _cell(text: Any) -> str:
    """Text fit for one cell of a Markdown table."""
    return " ".join(str(text).split()).replace("|", "\\|")


def _code(text: Any) -> str:
    text = str(text)
    return f"``{text}``" if "`" in text else f"`{text}`"


def _missing(docname: str, what: str) -> None:
    logger.warning("%s has no documentation (write it where it is declared)", what,
                   location=docname)


# ------------------------------------------------------------------------------------- CLI
def _commands(cmd: Any, path: tuple[str, ...]) -> Iterator[tuple[tuple[str, ...], Any]]:
    # typer >= 0.29 vendors click (typer._click): tell groups and parameters apart by what
    # they have, not by click's classes
    if hasattr(cmd, "commands"):
        for name in sorted(cmd.commands):
            yield from _commands(cmd.commands[name], path + (name,))
    else:
        yield path, cmd


def _cli(docname: str) -> str:
    import typer.main

    from recaudit.cli import app

    root = typer.main.get_command(app)
    out = []
    groups = [(name, sub) for name, sub in sorted(root.commands.items())]  # type: ignore[attr-defined]
    out.append("| command | what it does |\n| --- | --- |")
    for path, cmd in _commands(root, ("recaudit",)):
        summary = (cmd.help or "").strip().split("\n\n")[0]
        anchor = "-".join(path)
        out.append(f"| [{_code(' '.join(path))}](#{anchor}) | {_cell(summary)} |")
    out.append("")
    for name, sub in groups:
        if hasattr(sub, "commands") and not (sub.help or "").strip():
            _missing(docname, f"command group 'recaudit {name}'")
    for path, cmd in _commands(root, ("recaudit",)):
        title = " ".join(path)
        out.append(f"({'-'.join(path)})=\n## `{title}`\n")
        if not (cmd.help or "").strip():
            _missing(docname, f"command {title!r}")
        out.append(_help_text(cmd.help or ""))
        ctx = cmd.context_class(cmd, info_name=title)
        usage = " ".join(cmd.collect_usage_pieces(ctx))
        out.append(f"```text\n{title} {usage}\n```\n")
        rows = []
        for p in cmd.params:
            if p.name == "help":
                continue
            if p.param_type_name == "argument":
                names = p.name.upper()
                text = getattr(p, "help", None) or ""
                kind = "argument"
            else:
                names = ", ".join(p.opts + p.secondary_opts)
                text = getattr(p, "help", None) or ""
                kind = "option"
            if not text.strip():
                _missing(docname, f"{kind} {names} of {title!r}")
            typ = "flag" if getattr(p, "is_flag", False) else p.display_type(ctx).strip("<>")
            default = p.default if not callable(p.default) else None
            shown = "" if default in (None, (), []) or getattr(p, "required", False) \
                else _code(default)
            req = " (required)" if getattr(p, "required", False) else ""
            rows.append(f"| {_code(names)}{req} | {_cell(typ)} | {shown} | {_cell(text)} |")
        if rows:
            out.append("| argument / option | type | default | meaning |\n"
                       "| --- | --- | --- | --- |")
            out.extend(rows)
        out.append("")
    return "\n".join(out)


def _help_text(text: str) -> str:
    """A command's help as Markdown: typer's ``\\b`` no-rewrap markers dropped."""
    return "\n".join(line for line in text.strip().splitlines() if line.strip() != "\b") + "\n"


# ---------------------------------------------------------------------------------- config
_CONFIGS = (("audit", "recaudit run CONFIG", "recaudit.audit", "AuditConfig"),
            ("fuzz", "recaudit fuzz --config", "recaudit.fuzz", "FuzzStudy"),
            ("properties", "recaudit properties --config", "recaudit.properties",
             "PropertyStudy"),
            ("mirror", "recaudit simulate mirror --config", "recaudit.simulate",
             "MirrorConfig"))


def _type_text(prop: dict[str, Any]) -> str:
    if "anyOf" in prop:
        return " or ".join(_type_text(p) for p in prop["anyOf"])
    if "$ref" in prop:
        name = prop["$ref"].rsplit("/", 1)[1]
        return f"[{name}](#config-{name.lower()})"
    if "enum" in prop:
        return " \\| ".join(_code(json.dumps(v)) for v in prop["enum"])
    if prop.get("type") == "array":
        if "items" in prop:
            return f"list of {_type_text(prop['items'])}"
        if "prefixItems" in prop:
            return "[" + ", ".join(_type_text(p) for p in prop["prefixItems"]) + "]"
        return "list"
    if prop.get("type") == "object":
        return "table"
    return str(prop.get("type", "any"))


def _config(docname: str) -> str:
    import importlib

    from recaudit._schema import json_schema

    out = []
    seen: set[str] = set()
    for kind, command, module, name in _CONFIGS:
        cls = getattr(importlib.import_module(module), name)
        schema = json_schema(cls)
        out.append(f"## {kind.capitalize()} configuration\n\nRead by `{command}`; "
                   f"`recaudit schema {kind}` prints its JSON Schema. In Python: "
                   f"`{module}.{name}.from_dict(...)`.\n")
        objects = {name: schema, **schema.get("$defs", {})}
        for oname, obj in objects.items():
            if oname in seen:
                continue
            seen.add(oname)
            out.append(f"(config-{oname.lower()})=\n### `{oname}`\n")
            if not obj.get("description"):
                _missing(docname, f"configuration {oname}")
            out.append(obj.get("description", "") + "\n")
            out.append("| key | type | default | meaning |\n| --- | --- | --- | --- |")
            required = set(obj.get("required", ()))
            for key, prop in obj.get("properties", {}).items():
                doc = prop.get("description", "")
                if not doc:
                    _missing(docname, f"configuration key {oname}.{key}")
                default = "required" if key in required else _code(json.dumps(prop.get("default")))
                out.append(f"| `{key}` | {_type_text(prop)} | {default} | {_cell(doc)} |")
            out.append("")
    return "\n".join(out)


# ---------------------------------------------------------------------------------- models
def _models(docname: str) -> str:
    import inspect

    from recaudit.models import PRESETS, available, model_class, parameters

    out = ["| model | what it is |\n| --- | --- |"]
    names = available()
    for n in names:
        summary = (inspect.getdoc(model_class(n)) or "").split("\n\n")[0]
        out.append(f"| [{_code(n)}](#model-{n}) | {_cell(summary)} |")
    out.append("")
    for n in names:
        cls = model_class(n)
        doc = inspect.getdoc(cls) or ""
        if not doc:
            _missing(docname, f"model {n!r}")
        out.append(f"(model-{n})=\n## `{n}`\n\n{_cell(doc.split(chr(10) * 2)[0])} "
                   f"(class `{cls.__module__.split('._')[0]}.{cls.__name__}`)\n")
        out.append("| parameter | default | meaning |\n| --- | --- | --- |")
        for p, default, text in parameters(n):
            if not text:
                _missing(docname, f"parameter {p!r} of model {n!r}")
            out.append(f"| `{p}` | {_code(default)} | {_cell(text)} |")
        presets = [key for key, pre in sorted(PRESETS.items()) if pre.model == n]
        if presets:
            out.append("\nPaper presets: " + ", ".join(f"[{_code(k)}](#preset-{_slug(k)})"
                                                      for k in presets) + ".")
        out.append("")
    out.append("## Paper presets\n\n`create(\"lstm@oh2022\")` or `name = \"lstm@oh2022\"` "
               "trains a model as a paper did; `recaudit models list NAME@PAPER` prints the "
               "same as below.\n")
    for key, pre in sorted(PRESETS.items()):
        out.append(f"(preset-{_slug(key)})=\n### `{key}`\n\n{pre.model} as {pre.paper} "
                   f"trained it (source: {_code(pre.source)}).\n")
        out.append("- parameters: " + ", ".join(_code(f"{k}={v!r}") for k, v in pre.params.items()))
        for k, v in pre.data.items():
            out.append(f"- {k}: {_cell(v)}")
        if not pre.differences:
            _missing(docname, f"preset {key!r}'s differences from the paper")
        out.append("\nDifferences from the paper's code and text:\n")
        out.extend(f"- {_cell(d)}" for d in pre.differences)
        out.append("")
    return "\n".join(out)


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


# ----------------------------------------------------------------------------------- store
def _store(docname: str) -> str:
    import recaudit.audit  # noqa: F401 - each study declares its tables on import
    import recaudit.fuzz  # noqa: F401
    import recaudit.properties  # noqa: F401
    import recaudit.simulate  # noqa: F401
    from recaudit.experiment import TABLES

    out = []
    for name, table in TABLES.items():
        out.append(f"(table-{name.replace('_', '-')})=\n## `{name}`\n")
        if not table.doc:
            _missing(docname, f"store table {name!r}")
        key = ", ".join(f"`{k}`" for k in table.key) or "none (several rows per trial)"
        out.append(f"{table.doc}\n\nKey: {key}.\n")
        out.append("| column | type | meaning |\n| --- | --- | --- |")
        for c in table.columns:
            if not c.doc:
                _missing(docname, f"column {name}.{c.name}")
            extra = []
            if c.default is not None:
                extra.append(f"stores written before it was added read {_code(c.default)}")
            if c.renamed_from:
                extra.append(f"formerly `{c.renamed_from}`")
            note = f" ({'; '.join(extra)})" if extra else ""
            out.append(f"| `{c.name}` | {c.type} | {_cell(c.doc)}{note} |")
        out.append("")
    return "\n".join(out)


GENERATORS: dict[str, Callable[[str], str]] = {
    "cli": _cli, "config": _config, "models": _models, "store": _store}


def _source_read(app: Sphinx, docname: str, source: list[str]) -> None:
    def fill(m: re.Match[str]) -> str:
        name = m.group(1)
        if name not in GENERATORS:
            logger.warning("unknown reference %r (known: %s)", name, ", ".join(GENERATORS),
                           location=docname)
            return ""
        return GENERATORS[name](docname)

    source[0] = _MARKER.sub(fill, source[0])


def setup(app: Sphinx) -> dict[str, Any]:
    app.connect("source-read", _source_read)
    return {"version": "1", "parallel_read_safe": True}
