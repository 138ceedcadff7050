"""``recaudit report STORE -o report.html``: render an audit store as a report."""

from __future__ import annotations

from pathlib import Path

import typer

__all__ = ["register"]


def report(store: Path = typer.Argument(..., help="Audit store (.duckdb)."),
           output: Path = typer.Option(None, "--output", "-o",
                                       help="Output file: .html, .md or .tex (the format "
                                            "follows the name), or a folder for --format "
                                            "csv. Default: STORE with .html/.md/.tex, or "
                                            "STORE-tables/. Replaces only a report written "
                                            "before, never another file."),
           format: str | None = typer.Option(None, "--format", "-f",
                                             help="html (self-contained page), markdown, "
                                                  "latex or csv (tables only). Default: from "
                                                  "the -o name, else html."),
           ) -> None:
    """Render an audit store: the papers' tables and figures as one self-contained page.

    Needs the store alone: a colleague renders a store you send them without your models'
    code."""
    from recaudit.errors import ConfigError
    from recaudit.report import report_format, write_report

    fmt = report_format(output, format)
    if output is None:
        suffix = {"html": ".html", "markdown": ".md", "latex": ".tex"}
        output = store.with_name(store.stem + "-tables") if fmt == "csv" \
            else store.with_suffix(suffix[fmt])
    try:
        paths = write_report(store, output, fmt)
    except ModuleNotFoundError as exc:  # the report extra is optional
        if exc.name not in ("matplotlib", "jinja2", "markupsafe"):
            raise
        raise ConfigError(f"the report needs {exc.name}; install the report extra: "
                          "pip install 'recaudit[report]'") from None
    for path in paths:
        typer.echo(str(path))


def register(app: typer.Typer) -> None:
    app.command("report")(report)
