"""``recaudit datasets list | info NAME | fetch NAME``."""

from __future__ import annotations

import typer

from recaudit.cli._common import console as _console
from recaudit.cli._tables import add_columns, result_table


def list_cmd() -> None:
    """Show every registered dataset and whether it is available offline."""
    from recaudit.data import datasets

    reg = datasets.default_registry()
    table = result_table("recaudit datasets")
    add_columns(table, "name", "rows", "size", "sha256", "available")
    for name in reg.names():
        spec = reg.spec(name)
        loc = reg.locate(name)
        table.add_row(name, f"{spec.rows:,}" if spec.rows else "?", spec.approx_size,
                      "known" if spec.sha256_known else "unknown",
                      loc.origin if loc else "-")
    console = _console()
    console.print(table)
    console.print("Not available offline: `recaudit datasets fetch NAME` downloads it "
                  "(set RECAUDIT_MIRROR to use local copies).")


def info_cmd(name: str = typer.Argument(..., help="Dataset name (see `datasets list`).")) -> None:
    """Show a dataset's source, checksum, size, licence, citation and availability."""
    from recaudit.data import datasets

    info = datasets.dataset_info(name)
    width = max(len(k) for k in info)
    for key, value in info.items():
        typer.echo(f"{key:<{width}}  {value}")


def fetch_cmd(name: str = typer.Argument(..., help="Dataset name (see `datasets list`).")) -> None:
    """Make a dataset available offline: mirror, cache or a verified download."""
    from recaudit.data import datasets

    reg = datasets.default_registry()
    loc = reg.fetch(name, download=True)
    typer.echo(f"{name}: {loc.path} ({loc.origin})")


def register(app: typer.Typer) -> None:
    sub = typer.Typer(no_args_is_help=True, help="Public datasets: list, describe, download.")
    sub.command("list")(list_cmd)
    sub.command("info")(info_cmd)
    sub.command("fetch")(fetch_cmd)
    app.add_typer(sub, name="datasets")
