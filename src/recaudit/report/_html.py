"""The self-contained HTML page (Jinja2, autoescaped; figures inline as SVG; no scripts)."""

from __future__ import annotations

import datetime as _dt
from pathlib import Path
from typing import TYPE_CHECKING

from recaudit.report._build import Report, build_report

if TYPE_CHECKING:
    import jinja2

__all__ = ["render_html", "write_report"]


def _environment() -> jinja2.Environment:
    import jinja2

    env = jinja2.Environment(
        loader=jinja2.PackageLoader("recaudit.report", "templates"),
        autoescape=True, undefined=jinja2.StrictUndefined, trim_blocks=True,
        lstrip_blocks=True)
    return env


def render_html(report: Report) -> str:
    """The report as one HTML document. Every string from the store is escaped by the
    template engine; the only markup inserted verbatim is matplotlib's SVG output, whose
    text matplotlib itself escapes (and draws as paths)."""
    from markupsafe import Markup

    from recaudit._version import __version__

    env = _environment()
    figures = {f.key: Markup(f.svg) for s in report.sections for f in s.figures}
    generated = _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    return env.get_template("report.html.j2").render(
        report=report, svg=figures, version=__version__, generated=generated)


def write_report(store: str | Path, output: str | Path, fmt: str = "html") -> list[Path]:
    """Render ``store`` to ``output`` as ``html`` (one file), ``markdown``, ``latex`` (one
    file of tables) or ``csv`` (a directory, one file per table). Returns the files written."""
    from recaudit.report import _render

    if fmt not in ("html", "markdown", "latex", "csv"):
        from recaudit.errors import ConfigError

        raise ConfigError(f"unknown report format {fmt!r}; use html, markdown, latex or csv")
    report = build_report(store, figures=fmt == "html")
    output = Path(output)
    if fmt == "csv":
        return _render.write_csv(report, output)
    text = {"html": render_html, "markdown": _render.render_markdown,
            "latex": _render.render_latex}[fmt](report)
    from recaudit._files import atomic_text

    return [atomic_text(output, text)]
