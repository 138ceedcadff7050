"""Stores filled on several machines made one, and what two stores both hold compared.

A study's trials may run on a GPU box and a CPU box at once, each into a store of its own;
:func:`merge_stores` copies into one store what another holds and it lacks. A trial's id is its
spec and data, not the machine, so a trial both stores hold is the same trial: the first store's
rows stay. Whether the two machines *computed* the same thing is another question, answered by
:func:`shared_trials`: for every per-trial table without a key (an audit's ``query_results``),
the trials both stores hold and those whose rows differ in any shared column. Two GPUs of
different kinds, or a GPU and the CPU, may differ in the last bits; a merged store then mixes
machines, and the differing trials say by how much it matters.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from recaudit.errors import RecauditError, StoreBusyError
from recaudit.experiment._schema import TABLES, Table

if TYPE_CHECKING:
    from recaudit.experiment._store import Store

__all__ = ["Agreement", "merge_stores", "shared_trials"]

_SRC = "_merge_src"


@dataclass(frozen=True)
class Agreement:
    """The trials of ``table`` that two stores both hold (``shared``), and the ids of those
    whose rows differ (``differing``: as multisets over the columns both stores have)."""

    table: str
    shared: int
    differing: tuple[str, ...]

    @property
    def same(self) -> int:
        """Shared trials with identical rows."""
        return self.shared - len(self.differing)


@contextlib.contextmanager
def _attached(store: Store, other: str | Path) -> Iterator[set[str]]:
    """``other`` attached read-only to ``store``'s connection as ``_merge_src``; yields the
    declared tables it holds (an undeclared one is refused)."""
    import duckdb

    other = Path(other)
    if not other.exists():
        raise RecauditError(f"no results store at {other}")
    if other.resolve() == store.path.resolve():
        raise RecauditError(f"cannot merge {other} into itself")
    quoted = str(other).replace("'", "''")
    try:
        store.con.execute(f"ATTACH '{quoted}' AS {_SRC} (READ_ONLY)")
    except duckdb.IOException as exc:
        if "lock" in str(exc).lower():
            raise StoreBusyError(f"the results store {other} is in use by another process; "
                                 "wait for it to finish, or merge a copy of it (copy the "
                                 ".duckdb and its .wal)") from None
        raise RecauditError(f"cannot open results store {other}: {exc}") from None
    try:
        names = {r[0] for r in store.con.execute(
            f"SELECT table_name FROM duckdb_tables() WHERE database_name = '{_SRC}'"
        ).fetchall()}
        unknown = sorted(names - set(TABLES))
        if unknown:
            raise RecauditError(f"{other} holds tables no study declares: "
                                f"{', '.join(unknown)}; is it a recaudit store?")
        yield names
    finally:
        store.con.execute(f"DETACH {_SRC}")


def _source_columns(store: Store, table: str) -> set[str]:
    return {r[0] for r in store.con.execute(
        f"SELECT column_name FROM duckdb_columns() WHERE database_name = '{_SRC}' "
        "AND table_name = ?", [table]).fetchall()}


def merge_stores(store: Store, other: str | Path) -> dict[str, int]:
    """Copy into ``store`` what ``other`` holds and it lacks — a store filled on another
    machine (a GPU box, a second CPU box) with trials of the same studies. Returns the rows
    added per table.

    A table with a key gains the rows of ``other`` whose key is new here: a trial both stores
    hold keeps this store's row (the same id is the same trial, whichever machine ran it). A
    table without one (``query_results``) gains the rows of the trials (``trial_id``) it holds
    none of here, so a trial arrives whole. ``meta`` stays this store's. Columns are matched by
    name (an older ``other`` fills added columns with their defaults and renamed ones under
    their new name). One transaction: all or nothing. ``other`` is only read; the baseline
    cache beside it is not copied."""
    if store.read_only:
        raise RecauditError(f"{store.path} is open read-only; open it to write to merge")
    with _attached(store, other) as names:
        tables = [TABLES[n] for n in TABLES if n in names and n != "meta"]
        store.ensure(*tables)
        added: dict[str, int] = {}
        with store.transaction():
            for t in tables:
                added[t.name] = _merge_table(store, t)
        return added


def _merge_table(store: Store, t: Table) -> int:
    have = _source_columns(store, t.name)
    cols, sel = [], []
    for c in t.columns:
        source = c.name if c.name in have else c.renamed_from
        if source in have:
            cols.append(f'"{c.name}"')
            sel.append(f's."{source}"')
    if t.key:
        if not all(k in have for k in t.key):
            raise RecauditError(f"table {t.name} of the other store lacks its key "
                                f"columns {', '.join(t.key)}")
        on = " AND ".join(f'm."{k}" = s."{k}"' for k in t.key)
        where = f"NOT EXISTS (SELECT 1 FROM {t.name} m WHERE {on})"
    elif "trial_id" in have:
        where = f"s.trial_id NOT IN (SELECT DISTINCT trial_id FROM {t.name} " \
                "WHERE trial_id IS NOT NULL)"
    else:
        raise RecauditError(f"table {t.name} has neither a key nor trial ids: its rows "
                            "cannot be told apart, so it cannot be merged")
    before = store.count(t)
    store.con.execute(f"INSERT INTO {t.name} ({', '.join(cols)}) "
                      f"SELECT {', '.join(sel)} FROM {_SRC}.{t.name} s WHERE {where}")
    return store.count(t) - before


def shared_trials(store: Store, other: str | Path) -> list[Agreement]:
    """For every table without a key but with trial ids (an audit's ``query_results``) that
    both stores hold: the trials both hold, and those whose rows differ between the two
    (compared as multisets of rows over the columns both have, exactly: a float that differs in
    its last bit differs). Keyed tables are not compared: their rows carry when and where a
    trial ran. Only reads; ``store`` may be open read-only."""
    out = []
    with _attached(store, other) as names:
        mine = store.tables()
        for t in TABLES.values():
            if t.key or t.name not in names or t.name not in mine:
                continue
            theirs = _source_columns(store, t.name)
            cols = [f'"{c}"' for c in t.names if c in theirs]
            if '"trial_id"' not in cols:
                continue
            both = (f"SELECT DISTINCT trial_id FROM {t.name} WHERE trial_id IN "
                    f"(SELECT trial_id FROM {_SRC}.{t.name})")
            a = f"SELECT {', '.join(cols)} FROM {t.name} WHERE trial_id IN ({both})"
            b = f"SELECT {', '.join(cols)} FROM {_SRC}.{t.name} WHERE trial_id IN ({both})"
            shared, = store.con.execute(f"SELECT count(*) FROM ({both})").fetchone() or (0,)
            differing = store.con.execute(
                f"SELECT DISTINCT trial_id FROM (({a} EXCEPT ALL {b}) UNION ALL "
                f"({b} EXCEPT ALL {a})) ORDER BY trial_id").fetchall()
            if shared:
                out.append(Agreement(t.name, int(shared), tuple(r[0] for r in differing)))
    return out
