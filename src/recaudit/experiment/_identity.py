"""What makes a trial: its identity, declared field by field, and the id that hashes it.

A trial's id is ``sha256(canonical JSON of its identity + the data fingerprint)``, its first 20
hex digits (:func:`recaudit.experiment.spec_id`). Stores resume and merge by id, so an id must
change when — and only when — what the trial computes changes. The identity of a spec (a
:class:`~recaudit.config.Config` or dataclass: a trial, and the dataset, split, model and
metric specs inside it) is built by these rules, version :data:`ID_VERSION`:

- **declared fields** (:data:`DECLARED`, per class: the fields the class had when ids were
  first fixed) are always in the identity;
- **any other field** is in it only when its value differs from the field's default: a field
  added to a spec later, with a default, leaves every existing id as it was, and a trial that
  sets it gets an id of its own;
- **never**: fields that say how a trial is shown or where it runs, not what it computes
  (:data:`EXCLUDED`: a model's ``title``; its ``params["device"]``, :data:`PLACEMENT`);
- ``None``/zero-valued optional fields the first version already left out stay out when
  unset (:data:`OMITTED_WHEN_DEFAULT`: a model's ``stabilise``, a trial's ``draw``).

Version 1 reproduces the ids recaudit has written since its first release (pinned by
``tests/experiment/test_identity.py``). A future version that must change ids records itself
in the store (meta ``trial_id_version``) and migrates a store written under an older one when a
run opens it (:func:`migrate_ids`): the trials table keeps each trial's spec, so its id under
the new rules is recomputed, and every table of the study is rewritten in one transaction.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from recaudit._ids import spec_id
from recaudit.config import plain

__all__ = ["ID_VERSION", "DECLARED", "identity", "trial_key", "migrate_ids",
           "store_id_version"]

#: the version of the identity rules; stores record it (meta ``trial_id_version``)
ID_VERSION = 1

#: per spec class name, the fields always in the identity (version 1)
DECLARED: dict[str, tuple[str, ...]] = {
    "TrialSpec": ("dataset", "split", "model", "seed", "perturbation", "metrics", "draw"),
    "DatasetSpec": ("name", "path", "options", "min_user_interactions", "k_core",
                    "sample_users"),
    "SplitSpec": ("method", "ratio", "validation", "max_len", "floor"),
    "ModelSpec": ("name", "params", "stabilise"),
    "MetricSpec": ("k", "p", "depth"),
    "FuzzTrial": ("dataset", "model", "spec", "set_index", "seed", "k", "f"),
}
#: per class, fields never in the identity (display)
EXCLUDED: dict[str, tuple[str, ...]] = {"ModelSpec": ("title",)}
#: per class, declared fields left out while they hold their default (as version 1 did)
OMITTED_WHEN_DEFAULT: dict[str, tuple[str, ...]] = {"ModelSpec": ("stabilise",),
                                                    "TrialSpec": ("draw",)}
#: model parameters that place a model, never part of what it is
PLACEMENT = ("device",)


def _default(f: dataclasses.Field) -> Any:
    if f.default is not dataclasses.MISSING:
        return f.default
    if f.default_factory is not dataclasses.MISSING:
        return f.default_factory()
    return dataclasses.MISSING


def identity(spec: Any) -> Any:
    """The identity of ``spec`` (module docstring): plain JSON-ready data."""
    if not (dataclasses.is_dataclass(spec) and not isinstance(spec, type)):
        return plain(spec)
    name = type(spec).__name__
    declared = DECLARED.get(name)
    out: dict[str, Any] = {}
    for f in dataclasses.fields(spec):
        if f.name in EXCLUDED.get(name, ()):
            continue
        value = getattr(spec, f.name)
        default = _default(f)
        at_default = default is not dataclasses.MISSING and plain(value) == plain(default)
        if declared is not None and f.name not in declared and at_default:
            continue                  # a field added later, unset: ids stay as they were
        if f.name in OMITTED_WHEN_DEFAULT.get(name, ()) and at_default:
            continue
        out[f.name] = identity(value)
    if name == "ModelSpec" and isinstance(out.get("params"), dict):
        for key in PLACEMENT:
            out["params"].pop(key, None)
    return out


def trial_key(spec: Any, fingerprint: str) -> str:
    """The id of ``spec`` on data ``fingerprint``: :func:`spec_id` of its identity."""
    return spec_id(identity(spec), fingerprint)


def store_id_version(store: Any) -> int:
    """The identity version a store's ids were written under (1 when it does not say)."""
    value = store.meta().get("trial_id_version") if "meta" in store.tables() else None
    return int(value) if value is not None else 1


def migrate_ids(store: Any, tables: Sequence[Any],
                new_id: Callable[[Mapping[str, Any]], str | tuple[str, Mapping[str, Any]]],
                version: int = ID_VERSION) -> dict[str, str]:
    """Rewrite the trial ids of ``store``: for every row of the study's trials table (the
    first of ``tables``), ``new_id(row)`` is its id under identity ``version`` (or ``(id,
    {column: value})``: other keys of that row to rewrite, a baseline's key say); every
    table of ``tables`` and the ``plans`` table follow, in one transaction, and the store
    records ``version``. Returns ``{old id: new id}`` of the ids that changed."""
    trials = tables[0].name
    rows = store.sql(f"SELECT * FROM {trials}")
    changed: dict[str, str] = {}
    with store.transaction():
        for row in rows.to_dict(orient="records"):
            old = str(row["trial_id"])
            out = new_id(row)
            new, updates = (out, {}) if isinstance(out, str) else out
            for column, value in updates.items():
                store.con.execute(f'UPDATE {trials} SET "{column}" = ? WHERE trial_id = ?',
                                  [value, old])
            if new == old:
                continue
            changed[old] = new
            for table in [*tables, "plans"]:
                name = table if isinstance(table, str) else table.name
                if not isinstance(table, str) and "trial_id" not in table.names:
                    continue  # a study's table of something else (an audit's datasets)
                if name in store.tables():
                    store.con.execute(f"UPDATE {name} SET trial_id = ? WHERE trial_id = ?",
                                      [new, old])
        store.set_meta("trial_id_version", version)
    return changed
