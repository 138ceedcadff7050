"""What the commands that print results share: the table style, ``--format``, exact CSV and JSON.

Every result table fits an 80-column terminal whole (no number cut to ``…``): the commands
give a mean and its 95 % interval one row per measure (``measure | mean | 95 % interval``)
instead of a column per measure, name what is constant in the title, and let labels fold
rather than be cut. ``--format csv`` and ``--format json`` print the library's own frame for
programs: every float written as Python writes it (``repr``: it reads back bit for bit), a
missing value as an empty CSV field or JSON ``null``.
"""

from __future__ import annotations

import json
import math
from typing import Any

import typer

from recaudit.errors import ConfigError

__all__ = ["FORMATS", "add_columns", "check_format", "emit", "fits", "fitted", "format_option",
           "records", "result_table", "mean_and_interval", "p_header"]

#: The ``--format`` of the commands that print results.
FORMATS = ("table", "csv", "json")
_HELP = "table (for people), csv or json (for programs: every number in full)"


def check_format(value: str, allowed: tuple[str, ...] = FORMATS) -> str:
    """``value`` when it is one of ``allowed``, else a :class:`ConfigError` naming the flag."""
    if value not in allowed:
        raise ConfigError(f"--format must be {', '.join(allowed[:-1])} or {allowed[-1]}, got "
                          f"{value!r}")
    return value


def format_option(allowed: tuple[str, ...] = FORMATS) -> Any:
    """The ``--format/-f`` option of a command that prints results."""
    return typer.Option("table", "--format", "-f", help=_HELP if allowed == FORMATS else
                        " or ".join([", ".join(allowed[:-1]), allowed[-1]]))


def _plain(v: Any) -> Any:
    if isinstance(v, float) and math.isnan(v):
        return None
    if hasattr(v, "isoformat") and hasattr(v, "total_seconds"):  # a duration: ISO 8601
        return None if v != v else v.isoformat()
    if hasattr(v, "item") and not isinstance(v, (str, bytes)):  # numpy scalars
        v = v.item()
        return None if isinstance(v, float) and math.isnan(v) else v
    if v is not None and not isinstance(v, (str, int, float, bool, list, dict)):
        try:
            import pandas as pd

            if pd.isna(v):
                return None
        except (TypeError, ValueError):
            pass
        return str(v)
    return v


def records(frame: Any) -> list[dict[str, Any]]:
    """``frame``'s rows as JSON-ready dicts: floats exact, NaN as ``None``."""
    return [{str(k): _plain(v) for k, v in row.items()}
            for row in frame.to_dict(orient="records")]


def emit(frame: Any, fmt: str, extra: dict[str, Any] | None = None) -> bool:
    """CSV or JSON of ``frame`` on stdout; ``False`` for ``table`` (the caller renders it).
    ``extra``: JSON only, the output is an object ``{"rows": frame, **extra}``."""
    if fmt == "csv":
        typer.echo(frame.to_csv(index=False), nl=False)
    elif fmt == "json":
        rows = records(frame)
        typer.echo(json.dumps(rows if extra is None else {"rows": rows, **extra}, indent=2,
                              allow_nan=False))
    return fmt in ("csv", "json")


def result_table(title: str | None = None, caption: str | None = None) -> Any:
    """A rich table in the style of every result table: a rule under the header, no vertical
    lines (three columns fewer are cut at 80 columns), a blank line between sections."""
    from rich import box
    from rich.table import Table

    return Table(title=title, caption=caption, title_justify="left", caption_justify="left",
                 box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, collapse_padding=True)


def add_columns(table: Any, *columns: str, left: int = 1) -> None:
    """Columns: the first ``left`` left-aligned labels that fold when long, then numbers
    (right-aligned, never wrapped: a number is read whole or not at all)."""
    for i, col in enumerate(columns):
        if i < left:
            table.add_column(col, justify="left", overflow="fold")
        else:
            table.add_column(col, justify="right", no_wrap=True)


def mean_and_interval(row: Any, m: str, signed: bool = False) -> tuple[str, str]:
    """``(mean, "[low, high]")`` of measure ``m`` in a summary row (``"–"``, ``""`` when
    missing)."""
    from recaudit.audit import interval_text

    parts = interval_text(row, m, signed, "\n").split("\n")
    return parts[0], parts[1] if len(parts) > 1 else ""


def p_header(column: str) -> str:
    """``p_vs_seed_only`` -> ``p vs`` over ``seed-only``: two short lines."""
    return "p vs\n" + column[5:].replace("_", "-")


def fits(console: Any, table: Any) -> bool:
    """Whether ``table`` shows whole on ``console``: its natural width within the console's."""
    from rich.measure import Measurement

    wide = console.options.update(width=10_000)  # measured unbounded: its natural width
    return Measurement.get(console, wide, table).maximum <= console.width


def fitted(console: Any, title: str | None, columns: list[str], rows: list[list[str]],
           left: int = 1, caption: str | None = None) -> Any:
    """A table of ``rows`` under ``columns`` (the first ``left`` are labels) in the result
    style where it fits ``console`` whole; else the same cells one per line, ``row label |
    column | value``, so that a table wider than the terminal (a paper's table with a column
    per model) loses no number."""
    wide = result_table(title, caption)
    add_columns(wide, *columns, left=left)
    for row in rows:
        wide.add_row(*row)
    if fits(console, wide):
        return wide
    table = result_table(title, caption)
    add_columns(table, " · ".join(c or "row" for c in columns[:left]), "column", "value",
                left=3)
    for i, row in enumerate(rows):
        label = " · ".join(row[:left])
        for j, (col, v) in enumerate(zip(columns[left:], row[left:])):
            table.add_row(label if j == 0 else "", col, v,
                          end_section=j == len(columns) - left - 1 and i < len(rows) - 1)
    return table
