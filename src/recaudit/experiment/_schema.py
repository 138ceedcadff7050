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

from dataclasses import dataclass

__all__ = ["Column", "Table", "TABLES", "META", "PLANS", "columns", "register"]


@dataclass(frozen=True)
class Column:
    """A column: ``name`` and DuckDB ``type`` (``VARCHAR``, ``BIGINT``, ``DOUBLE``,
    ``BOOLEAN``, ``JSON``). ``default``: a SQL literal for a column added after stores were
    written; a store that lacks it gains it with that value (and reads show it).
    ``renamed_from``: the column's name in stores written before it was renamed."""

    name: str
    type: str
    default: str | None = None
    renamed_from: str | None = None


@dataclass(frozen=True)
class Table:
    """A table: ``name``, ``columns`` and its ``key`` columns (a row per key)."""

    name: str
    columns: tuple[Column, ...]
    key: tuple[str, ...] = ()

    @property
    def names(self) -> list[str]:
        return [c.name for c in self.columns]

    def ddl(self) -> str:
        cols = [f'"{c.name}" {c.type}' for c in self.columns]
        if self.key:
            cols.append("PRIMARY KEY (" + ", ".join(f'"{k}"' for k in self.key) + ")")
        return f"CREATE TABLE IF NOT EXISTS {self.name} ({', '.join(cols)})"


def columns(spec: str) -> tuple[Column, ...]:
    """``"a VARCHAR, b BIGINT, c BIGINT DEFAULT 0"`` as columns."""
    out = []
    for part in spec.split(","):
        name, typ, *rest = part.split()
        out.append(Column(name, typ, rest[1] if rest[:1] == ["DEFAULT"] else None))
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


META = Table("meta", columns("key VARCHAR, value JSON"), key=("key",))
PLANS = Table("plans", columns("kind VARCHAR, plan VARCHAR, trial_id VARCHAR"),
              key=("kind", "plan", "trial_id"))
register(META, PLANS)
