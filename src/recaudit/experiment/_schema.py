"""Tables of a results store: declared once, by the study that writes them.

A :class:`Table` names its columns (DuckDB types) and key. The experiment layer declares only
what every store holds: ``meta`` (key: JSON facts of the runs) and ``plans`` (which trial ids
each run of each study asked for). Each study declares its own tables next to its code
(:mod:`recaudit.audit`, :mod:`recaudit.fuzz`, :mod:`recaudit.properties`,
:mod:`recaudit.simulate`) and registers them (:func:`register`), so a store reads and migrates
them by name. A column added after stores were written carries a ``default`` (older stores
gain it); a column renamed carries the old name in ``renamed_from`` (older stores are renamed
when opened for writing, and read under the new name).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

__all__ = ["Column", "Table", "TABLES", "META", "PLANS", "columns", "register"]


@dataclass(frozen=True)
class Column:
    """A column: ``name`` and DuckDB ``type`` (``VARCHAR``, ``BIGINT``, ``DOUBLE``,
    ``BOOLEAN``, ``JSON``, ``BLOB``). ``default``: a SQL literal for a column added after stores were
    written; a store that lacks it gains it with that value (and reads show it).
    ``renamed_from``: the column's name in stores written before it was renamed. ``doc``: what
    a value means (not part of the layout: two declarations that differ only in it are one)."""

    name: str
    type: str
    default: str | None = None
    renamed_from: str | None = None
    doc: str = field(default="", compare=False)


@dataclass(frozen=True)
class Table:
    """A table: ``name``, ``columns`` and its ``key`` columns (a row per key); ``doc``: what
    a row is."""

    name: str
    columns: tuple[Column, ...]
    key: tuple[str, ...] = ()
    doc: str = field(default="", compare=False)

    @property
    def names(self) -> list[str]:
        return [c.name for c in self.columns]

    def ddl(self) -> str:
        cols = [f'"{c.name}" {c.type}' for c in self.columns]
        if self.key:
            cols.append("PRIMARY KEY (" + ", ".join(f'"{k}"' for k in self.key) + ")")
        return f"CREATE TABLE IF NOT EXISTS {self.name} ({', '.join(cols)})"


def columns(spec: str, docs: Mapping[str, str] | None = None) -> tuple[Column, ...]:
    """``"a VARCHAR, b BIGINT, c BIGINT DEFAULT 0"`` as columns, documented by ``docs``
    (``{column: text}``)."""
    docs = docs or {}
    out = []
    for part in spec.split(","):
        name, typ, *rest = part.split()
        out.append(Column(name, typ, rest[1] if rest[:1] == ["DEFAULT"] else None,
                          doc=docs.get(name, "")))
    unknown = set(docs) - {c.name for c in out}
    if unknown:
        raise ValueError(f"documentation for columns that are not declared: {sorted(unknown)}")
    return tuple(out)


#: Every declared table by name (the experiment layer's own, then the studies' as they are
#: imported).
TABLES: dict[str, Table] = {}


def register(*tables: Table) -> None:
    """Declare tables (a study's, at import); a name is declared once, with one layout."""
    for t in tables:
        if TABLES.get(t.name, t) != t:
            raise ValueError(f"table {t.name!r} is declared twice with different columns")
        TABLES[t.name] = t


META = Table("meta", columns("key VARCHAR, value JSON", {
    "key": "what the fact is about: 'config' (the last run's configuration), 'data' (the "
           "datasets' summaries), a study's own facts",
    "value": "the fact, as JSON"}), key=("key",),
    doc="Facts about the runs that wrote the store, one JSON value per key.")
PLANS = Table("plans", columns("kind VARCHAR, plan VARCHAR, trial_id VARCHAR", {
    "kind": "the study that planned the trial (audit, fuzz, properties, mirror)",
    "plan": "identifier of the run's plan (a hash of its configuration)",
    "trial_id": "a trial the plan asked for (its row in the study's trials table once done)"}),
    key=("kind", "plan", "trial_id"),
    doc="Which trials each run planned, so `recaudit status` can say how many are done.")
register(META, PLANS)
