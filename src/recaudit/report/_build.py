"""Assemble a report: each study's sections, where the store has its data, then the setup.

A study's part of the report lives in a module of its own (:mod:`._audit`,
:mod:`._properties`, :mod:`._fuzz`, :mod:`._mirror`): its sections (tables and figures),
the facts it adds to the header and its setup tables.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from recaudit.report import _audit, _fuzz, _mirror, _plots, _properties
from recaudit.report._data import ReportData, load
from recaudit.report._document import FigureItem, Report, Section

__all__ = ["Report", "Section", "FigureItem", "build_report"]


def build_report(store: str | Path | ReportData, *, figures: bool = True) -> Report:
    """Read ``store`` and build every section it has data for (``figures=False`` skips the
    matplotlib figures: tables only, for the markdown / LaTeX / CSV renderers).

    Sections, each only where the file has its data: the stability audit (RLS, accuracy,
    user groups, counts, position removal, stabilisation), property templates, fuzzing,
    MIRROR, setup."""
    data = store if isinstance(store, ReportData) else load(store)

    def fig(key: str, title: str, make: Any, caption: str = "") -> list[FigureItem]:
        if not figures:
            return []
        with _plots.style():
            f = make()
            return [] if f is None else [FigureItem(key, title, _plots.to_svg(f, key), caption)]

    with data.kept_open():  # one connection for every question the sections ask
        sections = _audit.sections(data, fig) if data.has_audit else []
        for study in (_properties, _fuzz, _mirror):
            sections += study.sections(data, fig)
        setup = Section("setup", "Setup", "Configuration, data, versions and timings.")
        setup.tables += _audit.setup_tables(data)
        table = _fuzz.fuzz_setup_table(data)
        setup.tables += [table] if table is not None else []
    if setup.tables:
        sections.append(setup)
    return Report(_title(data), _facts(data), sections, data)


#: Names an audit gets when nobody named it (``AuditConfig``'s default, and ``recaudit audit``'s
#: before it named its audits by what they audit): the report's title then says what it holds.
_UNNAMED = ("audit", "quick-audit")


def _title(data: ReportData) -> str:
    name = data.config.get("name") if data.has_audit else None
    if data.has_audit and (not name or name in _UNNAMED):
        models = data.models()
        name = (", ".join(models[:-1]) + " and " if len(models) > 1 else "") + models[-1] \
            + " on " + ", ".join(data.datasets)
    if data.has_audit:
        kind = "Stability audit" if len(data.kinds) == 1 else "Audit report"
        return f"{kind}: {name or data.path.name}"
    kinds = {"property": "Property study", "evolving": "Property study",
             "fuzzing": "Fuzzing study", "MIRROR": "MIRROR benchmark"}
    found = list(dict.fromkeys(v for k, v in kinds.items()
                               if any(x.startswith(k) for x in data.kinds)))
    return f"{' · '.join(found) or 'Results'}: {data.path.name}"


def _facts(data: ReportData) -> list[tuple[str, str]]:
    facts = [("file", str(data.path)), ("holds", "; ".join(data.kinds))]
    if data.has_audit:
        facts += _audit.facts(data)
    facts += _fuzz.facts(data) + _mirror.facts(data)
    for key, entry in data.properties.items():
        name = "Table 3.4" if key == "table" else "Table 3.6"
        facts.append((f"properties ({name})", f"{entry.get('dataset')} · k = "
                       f"{entry.get('k')} · seed {entry.get('seed')}"))
    return facts
