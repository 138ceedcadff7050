"""``recaudit perturbations list [TEXT]``: every perturbation name, in words."""

from __future__ import annotations

import typer

from recaudit.cli._common import console as _console
from recaudit.cli._tables import add_columns, result_table

__all__ = ["register"]


def list_cmd(text: str = typer.Argument(None, help="Show only the names containing TEXT "
                                        "(e.g. casper, delete, fuzz).")) -> None:
    """Show every perturbation name `-p` accepts, with what it changes and its parameters.

    ``<n>`` stands for a count; an edit takes ``-k<count>`` (``casper-delete-k4``) and any
    name but a floor takes ``+inputs`` (the test inputs get the same edits)."""
    from rich.text import Text

    from recaudit.errors import ConfigError, did_you_mean
    from recaudit.perturb import catalogue

    entries = catalogue()
    if text:
        shown = [e for e in entries if text.lower() in e.name.lower()]
        if not shown:
            raise ConfigError(f"no perturbation name contains {text!r}."
                              + did_you_mean(text, [e.name for e in entries], cutoff=0.4),
                              hint="recaudit perturbations list shows them all")
        entries = shown
    table = result_table("recaudit perturbations")
    add_columns(table, "name", "what it does", left=2)
    for i, e in enumerate(entries):  # as text: no markup, no emoji (fuzz:ZERO:<n> holds ':ZERO:')
        about = Text(e.description)
        about.append(f"\n{e.family}" + (f"; parameters: {e.parameters}" if e.parameters else ""),
                     style="dim")
        table.add_row(Text(e.name), about, end_section=i < len(entries) - 1)
    console = _console()
    console.print(table)
    console.print("<n>: a count. Edits take -k<count> (casper-delete-k4); every name but the "
                  "floors takes +inputs. Parameters are set in a table: perturbations = "
                  "[{name = \"casper-delete\", max_len = 50}].", markup=False)


def register(app: typer.Typer) -> None:
    sub = typer.Typer(no_args_is_help=True, help="Perturbations: the names -p accepts.")
    sub.command("list")(list_cmd)
    app.add_typer(sub, name="perturbations")
