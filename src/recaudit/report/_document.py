"""The report as a document: tables of cells, figures, sections — plain data, no rendering.

Every section of every study is made of these (:mod:`recaudit.report._build` assembles them;
:mod:`._html` and :mod:`._render` render them).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pandas as pd

if TYPE_CHECKING:
    from recaudit.report._data import ReportData

__all__ = ["Cell", "Table", "FigureItem", "Section", "Report"]


@dataclass(frozen=True)
class Cell:
    """One table cell: its display ``text`` and, for numbers, the ``value`` (mean), a
    ``mark``, whether it is ``significant`` (with the ``p_value``) and the 95 % interval of
    the value (``low``, ``high``).

    Marks: ``"best"`` (lowest RLS, significantly below every other perturbation: the most
    destabilising one, Oh et al. 2022 Table 3), ``"bold"``/``"italic"``
    (significantly greater / lower than a baseline, Shriver 2018 Tables 4.6-4.9) and
    ``"highlight"`` (a flagged value, e.g. a robust property in Shriver 2018 Table 3.6)."""

    text: str
    value: float | None = None
    mark: str | None = None
    significant: bool = False
    p_value: float | None = None
    low: float | None = None
    high: float | None = None


@dataclass(frozen=True)
class Table:
    """A titled table; the first ``n_labels`` columns are row labels."""

    key: str
    title: str
    columns: tuple[str, ...]
    rows: tuple[tuple[Cell, ...], ...]
    caption: str = ""
    n_labels: int = 1
    notes: tuple[str, ...] = field(default_factory=tuple)

    def display_rows(self) -> list[tuple[bool, list[tuple[Cell, bool]]]]:
        """Rows for display: ``(starts_group, [(cell, repeated), ...])`` where ``repeated``
        marks a leading label equal to the one above (with all labels left of it), shown
        blank, and ``starts_group`` a row whose first label differs from the row above."""
        rows = []
        prev: tuple[Cell, ...] | None = None
        for row in self.rows:
            flags, same = [], prev is not None
            for j, cell in enumerate(row):
                same = same and j < self.n_labels - 1 and prev is not None \
                    and prev[j].text == cell.text
                flags.append((cell, same))
            rows.append(flags)
            prev = row
        g = self.n_labels - 2  # the last label column that can repeat
        grouped = g >= 0 and any(flags[g][1] for flags in rows)
        return [(grouped and i > 0 and not flags[g][1], flags) for i, flags in enumerate(rows)]

    def to_frame(self) -> pd.DataFrame:
        """Numbers as numbers: one column per table column, plus ``<col> ci_low``,
        ``<col> ci_high``, ``<col> mark`` and ``<col> p`` columns where the table has them."""
        data: dict[str, list[Any]] = {}
        for j, col in enumerate(self.columns):
            cells = [r[j] for r in self.rows]
            if j < self.n_labels or all(c.value is None for c in cells):
                data[col] = [c.text for c in cells]
                continue
            # a cell without a number keeps its text (a set of items, "∞"), an empty one None
            data[col] = [c.value if c.value is not None
                         else (c.text if c.text not in ("", "–") else None) for c in cells]
            if any(c.low is not None for c in cells):
                data[f"{col} ci_low"] = [c.low for c in cells]
                data[f"{col} ci_high"] = [c.high for c in cells]
            if any(c.mark for c in cells):
                data[f"{col} mark"] = [c.mark or "" for c in cells]
            if any(c.p_value is not None for c in cells):
                data[f"{col} p"] = [c.p_value for c in cells]
        return pd.DataFrame(data)


def _num(x: Any) -> float | None:
    try:
        v = float(x)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(v) else v


def _fmt(v: float | None, digits: int = 4) -> str:
    return "–" if v is None else f"{v:.{digits}f}"


def _mean_ci(mean: Any, low: Any, high: Any, mark: str | None = None, *,
             signed: bool = False) -> Cell:
    """A mean with its 95 % interval, always in one form: ``0.9990 [0.9962, 1.0000]`` (a
    half-width would not do: an interval clipped at the measure's range, or of a bounded
    quantity, is not symmetric, and a column that mixed ``±`` with ``[ ]`` read as two kinds
    of number). ``signed``: a difference, written ``+0.0012``."""
    m, lo, hi = _num(mean), _num(low), _num(high)
    fmt = (lambda v: "–" if v is None else f"{v:+.4f}") if signed else _fmt
    if m is None or lo is None or hi is None:
        return Cell(fmt(m), m, mark)
    return Cell(f"{fmt(m)} {interval_text(fmt(lo), fmt(hi))}", m, mark, low=lo, high=hi)


def interval_text(low: str, high: str) -> str:
    """``[low, high]`` held together (a no-break space after the comma): a narrow table
    breaks a cell between its mean and its interval, never inside the interval."""
    return f"[{low},\u00a0{high}]"


def _text(x: Any) -> Cell:
    return Cell("" if x is None else str(x))


def _slug(text: str) -> str:
    import hashlib
    import re

    base = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:40]
    return f"{base}-{hashlib.sha1(text.encode()).hexdigest()[:6]}"


@dataclass
class FigureItem:
    """A rendered figure: an inline ``<svg>`` element, its title and caption."""

    key: str
    title: str
    svg: str
    caption: str = ""


@dataclass
class Section:
    """A part of the report: its ``intro``, its ``reading`` (short lines in words, one per
    model: :func:`recaudit.audit.reading`), then its tables and figures."""

    key: str
    title: str
    intro: str = ""
    tables: list[Table] = field(default_factory=list)
    figures: list[FigureItem] = field(default_factory=list)
    reading: list[str] = field(default_factory=list)


@dataclass
class Report:
    """Everything a renderer needs: ``title``, ``facts`` (headline key/values) and
    ``sections``; ``tables`` lists every table in section order."""

    title: str
    facts: list[tuple[str, str]]
    sections: list[Section]
    data: ReportData

    @property
    def tables(self) -> list[Table]:
        return [t for s in self.sections for t in s.tables]


def _flatten(obj: Any, prefix: str = "") -> list[tuple[str, str]]:
    if isinstance(obj, dict) and obj:
        out = []
        for k, v in obj.items():
            out += _flatten(v, f"{prefix}.{k}" if prefix else str(k))
        return out
    if isinstance(obj, list) and obj and any(isinstance(x, dict) for x in obj):
        out = []
        for i, v in enumerate(obj):
            out += _flatten(v, f"{prefix}[{i}]")
        return out
    return [(prefix, obj if isinstance(obj, str) else json.dumps(obj))]
