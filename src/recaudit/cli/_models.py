"""``recaudit models list [NAME]``: registered models and their parameters with defaults;
``NAME@PAPER`` shows a paper preset with every documented difference."""

from __future__ import annotations

import inspect

import typer

from recaudit.cli._common import console as _console


def _summary(name: str) -> str:
    from recaudit.models import model_class

    doc = inspect.getdoc(model_class(name)) or ""
    return doc.splitlines()[0] if doc else ""


def list_cmd(name: str = typer.Argument(None, help="Show one model only.")) -> None:
    """Show every registered model with its parameters and their defaults."""
    from rich.table import Table

    from recaudit.models import available, model_class, parameters
    from recaudit.models import PRESETS

    console = _console(140)
    if name and "@" in name:
        _show_preset(console, name)
        return
    names = [name] if name else available()
    for n in names:
        model_class(n)  # unknown name -> ConfigError with a suggestion
    if name:  # one model: every parameter with its documentation
        table = Table(title=f"{name}: {_summary(name)}", show_lines=True)
        for col in ("parameter", "default", "meaning"):
            table.add_column(col, no_wrap=col != "meaning")
        for p, d, doc in parameters(name):
            table.add_row(p, d, doc)
        console.print(table)
        console.print(f"Use it: recaudit.models.create({name!r}, **parameters).")
        return
    table = Table(title="recaudit models", show_lines=True)
    table.add_column("name", no_wrap=True)
    table.add_column("model")
    table.add_column("parameters (defaults)")
    for n in names:
        params = ", ".join(f"{p}={d}" for p, d, _ in parameters(n))
        table.add_row(n, _summary(n), params)
    console.print(table)
    presets = Table(title="paper presets (recaudit models list NAME@PAPER for details)")
    for col in ("name", "paper", "follows"):
        presets.add_column(col)
    for key, pre in sorted(PRESETS.items()):
        presets.add_row(key, pre.paper, pre.source)
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
