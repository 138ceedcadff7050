"""``recaudit models list [NAME]``: registered models and their parameters with defaults;
``NAME@PAPER`` shows a paper preset with every documented difference."""

from __future__ import annotations

import inspect

import typer

from recaudit.cli._common import console as _console
from recaudit.cli._tables import add_columns, result_table


def _summary(name: str) -> str:
    from recaudit.models import model_class

    doc = inspect.getdoc(model_class(name)) or ""
    return doc.splitlines()[0] if doc else ""


def list_cmd(name: str = typer.Argument(None, help="Show one model only.")) -> None:
    """Show every registered model with its parameters and their defaults."""
    from rich.text import Text

    from recaudit.models import available, model_class, parameters
    from recaudit.models import PRESETS

    console = _console()
    if name and "@" in name:
        _show_preset(console, name)
        return
    names = [name] if name else available()
    for n in names:
        model_class(n)  # unknown name -> ConfigError with a suggestion
    if name:  # one model: every parameter with its documentation
        table = result_table(f"{name}: {_summary(name)}")
        add_columns(table, "parameter", "default", "meaning", left=3)
        rows = parameters(name)
        for i, (p, d, doc) in enumerate(rows):
            table.add_row(p, d, doc, end_section=i < len(rows) - 1)
        console.print(table)
        console.print(f"Use it: recaudit.models.create({name!r}, **parameters).")
        return
    table = result_table("recaudit models")
    add_columns(table, "name", "model; parameters (defaults)", left=2)
    for i, n in enumerate(names):
        about = Text(_summary(n))
        about.append("\n" + ", ".join(f"{p}={d}" for p, d, _ in parameters(n)), style="dim")
        table.add_row(Text(n), about, end_section=i < len(names) - 1)
    console.print(table)
    presets = result_table("paper presets (recaudit models list NAME@PAPER for details)")
    add_columns(presets, "name", "paper; follows", left=2)
    for key, pre in sorted(PRESETS.items()):
        presets.add_row(key, f"{pre.paper}; {pre.source}")
    console.print(presets)
    console.print("Use a model: recaudit.models.create(NAME, **parameters).")


def _show_preset(console, name: str) -> None:
    from recaudit.models import preset

    p = preset(name)
    console.print(f"[bold]{name}[/bold]: {p.model} as {p.paper} trained it ({p.source})")
    console.print("parameters: " + ", ".join(f"{k}={v!r}" for k, v in p.params.items()))
    for k, v in p.data.items():
        console.print(f"{k}: {v}")
    console.print("differences:")
    for d in p.differences:
        console.print(f"  - {d}")


def register(app: typer.Typer) -> None:
    from recaudit.cli._check import check_cmd

    sub = typer.Typer(no_args_is_help=True,
                      help="Recommendation models: list with parameters, check conformance.")
    sub.command("list")(list_cmd)
    sub.command("check")(check_cmd)
    app.add_typer(sub, name="models")
