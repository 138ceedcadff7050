"""``recaudit report STORE -o report.html``: render an audit store as a report."""

from __future__ import annotations

from pathlib import Path

import typer

__all__ = ["register"]


def report(store: Path = typer.Argument(..., help="Audit store (.duckdb)."),
           output: Path = typer.Option(None, "--output", "-o",
                                       help="Output file (a directory for csv). Default: "
                                            "STORE with .html/.md/.tex, or STORE-tables/."),
           format: str = typer.Option("html", "--format", "-f",
                                      help="html (self-contained page), markdown, latex or csv "
                                           "(tables only)."),
           ) -> None:
    """Render an audit store: the papers' tables and figures as one self-contained page."""
    from recaudit.errors import ConfigError

    fmt = format.lower()
    suffix = {"html": ".html", "markdown": ".md", "md": ".md", "latex": ".tex", "tex": ".tex"}
    fmt = {"md": "markdown", "tex": "latex"}.get(fmt, fmt)
    if fmt not in ("html", "markdown", "latex", "csv"):
        raise ConfigError(f"--format must be html, markdown, latex or csv, got {format!r}")
    from recaudit.report import write_report

    if output is None:
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
