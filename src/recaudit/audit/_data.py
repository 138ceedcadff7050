"""The data an audit ran on: kept in its store, and found again for the per-user figures.

Who is affected (:mod:`._slices`, :mod:`._changes`, :mod:`._exposure`, the report's section)
needs the filtered log the trials saw and its split, identified by the log's fingerprint
(``trials.data_fingerprint``). :func:`audit_data` takes it from the first of:

1. a file the caller names (``data``, ``--data PATH``: the audit's file, moved or renamed),
   read with the trials' dataset options and filters, for the dataset whose fingerprint it
   has; a file that holds none of the store's datasets is refused, naming both fingerprints
   (:func:`check_paths`);
2. the store's own copy (table ``datasets``): the filtered log as Parquet (zstd), written
   with the first trial of each log (:func:`keep_data`), so that a store alone is enough,
   wherever it is opened and whatever became of the file;
3. the file where the audit read it: its absolute path as resolved when the audit ran, then
   the path as given, from the working folder, then next to the store;
4. for a registered or the synthetic dataset, the dataset made again from its spec.

Whatever the source, the log must have the trials' fingerprint. The split is made again from
the log and the trials' split spec (:func:`recaudit.experiment.split_log`: deterministic).

Why a copy, not only the path: a path breaks when the store travels (a colleague, another
folder, the report) and the file does not. The copy costs less than one trial's per-query rows,
once per log (measured on audits of four GRU4Rec trials, DuckDB's used blocks): a 100,004-row
log (MovieLens latest-small) is 0.68 MB of Parquet and adds 1.3 MB to a 7.1 MB store (1.8 MB a
trial), the synthetic dataset (17,403 rows) 0.12 MB and 0.5 MB to 3.4 MB (0.9 MB a trial);
writing it takes 0.3 s. Stores written before it was kept read their data from the paths, or
from ``--data``. The copy is the log itself: a store is then shared as the data would be.
"""

from __future__ import annotations

import json
import logging
import os
import tempfile
import warnings
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from recaudit.audit._store import DATASETS, AuditStore
from recaudit.data import Interactions, Split
from recaudit.errors import DataError, RecauditError, RecauditWarning
from recaudit.experiment import (DatasetSpec, SplitSpec, Store, canonical_json, prepare,
                                 split_log)

__all__ = ["DATASETS", "DataPaths", "StoreData", "audit_data", "check_paths", "data_file",
           "keep_data", "kept_fingerprints"]

log = logging.getLogger(__name__)


#: Files a caller names for the data of a store (``--data``).
DataPaths = Sequence[str | os.PathLike] | str | os.PathLike | None


def _paths(data: DataPaths) -> list[Path]:
    if data is None:
        return []
    if isinstance(data, (str, os.PathLike)):
        return [Path(data)]
    return [Path(p) for p in data]


# ------------------------------------------------------------------------------ writing
def _parquet(data: Interactions) -> bytes | None:
    """``data`` as Parquet bytes, or ``None`` where reading them back would not give the same
    log (ids of a type Parquet's metadata does not keep)."""
    from recaudit.data import read_parquet

    with tempfile.TemporaryDirectory(prefix="recaudit-log-") as tmp:
        path = Path(tmp) / "log.parquet"
        data.to_parquet(path, compression="zstd")
        if read_parquet(path).fingerprint() != data.fingerprint():
            log.info("%s: the log does not read back from Parquet as it was; the store keeps "
                     "its path only", data.name)
            return None
        return path.read_bytes()


def kept_fingerprints(store: Store) -> set[str]:
    """The logs ``store`` keeps (by fingerprint)."""
    if DATASETS.name not in store.tables():
        return set()
    return set(store.sql("SELECT data_fingerprint FROM datasets").data_fingerprint)


def keep_data(store: Store, label: str, spec: DatasetSpec, data: Interactions) -> None:
    """Write ``data`` (the filtered log of ``spec``, named ``label`` by the trials) to the
    store's ``datasets`` table with where it was read from."""
    path = None if spec.path is None else str(spec.path)
    store.ensure(DATASETS)
    store.insert(DATASETS, [{
        "data_fingerprint": data.fingerprint(), "dataset": label, "path": path,
        "resolved_path": None if path is None else str(Path(path).resolve()),
        "interactions": len(data), "log": _parquet(data)}], replace=True)


# ------------------------------------------------------------------------------ reading
def _spec(s: AuditStore, dataset: str, fingerprint: str | None) -> dict[str, Any]:
    if "spec" not in s._present("trials"):
        raise RecauditError(f"{s.path}: its trials do not record their specs, so the data "
                            f"of {dataset!r} cannot be found again")
    where = "dataset = ?" + ("" if fingerprint is None else " AND data_fingerprint = ?")
    rows = s.con.execute(f"SELECT spec FROM trials WHERE {where} AND spec IS NOT NULL LIMIT 1",
                         [dataset] + ([] if fingerprint is None else [fingerprint])).fetchall()
    if not rows:
        raise RecauditError(f"{s.path}: no trial of dataset {dataset!r} records its spec, so "
                            "its data cannot be found again")
    spec = rows[0][0]
    return json.loads(spec) if isinstance(spec, str) else dict(spec)


def _kept(s: AuditStore, fingerprint: str | None) -> dict[str, Any] | None:
    """The store's ``datasets`` row of ``fingerprint`` (``None``: none)."""
    if fingerprint is None or DATASETS.name not in s.tables():
        return None
    rows = s.sql("SELECT * FROM datasets WHERE data_fingerprint = ?", [fingerprint])
    return None if rows.empty else rows.iloc[0].to_dict()


def _candidates(s: AuditStore, spec: DatasetSpec, kept: dict[str, Any] | None) -> list[Path]:
    """Where the audit's file may be (module docstring, 3), in order."""
    if spec.path is None:
        return []
    given = Path(spec.path)
    out = [Path(str(kept["resolved_path"]))] if kept and kept.get("resolved_path") else []
    out.append(given)
    if not given.is_absolute():
        out.append(Path(s.path).resolve().parent / given)
    return out


def _stored(s: AuditStore, dataset: str, fingerprint: str | None
            ) -> tuple[DatasetSpec, SplitSpec]:
    spec = _spec(s, dataset, fingerprint)
    return DatasetSpec.from_dict(spec["dataset"]), SplitSpec.from_dict(spec.get("split", {}))


def _fingerprint(spec: DatasetSpec, path: Path, split: SplitSpec) -> str | None:
    """The fingerprint of ``path`` read as ``spec`` reads its file (``None``: unreadable).
    Quietly: what the filters drop from a file that may be another was said when the audit
    read the right one."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RecauditWarning)
            return prepare(replace(spec, path=str(path)), split)[0].fingerprint()
    except RecauditError:
        return None


def _named(spec: DatasetSpec, split: SplitSpec, fingerprint: str | None,
           data: DataPaths) -> DatasetSpec | None:
    """The spec reading the file of ``data`` that holds this dataset (``None``: none does;
    a store without fingerprints takes the first readable one)."""
    if spec.path is None:
        return None
    for path in _paths(data):
        got = _fingerprint(spec, path, split)
        if got is not None and (fingerprint is None or got == fingerprint):
            return replace(spec, path=str(path))
    return None


def data_file(s: AuditStore, dataset: str, fingerprint: str | None,
              data: DataPaths = None) -> DatasetSpec:
    """The trials' dataset spec with its ``path`` where the file is now: a file of ``data``
    that holds this dataset, else the first place of the module docstring's (3) that exists
    (the spec as stored when none does)."""
    spec, split = _stored(s, dataset, fingerprint)
    named = _named(spec, split, fingerprint, data)
    if named is not None:
        return named
    for path in _candidates(s, spec, _kept(s, fingerprint)):
        if path.exists():
            return replace(spec, path=str(path))
    return spec


#: Logs read from stores' copies and split, by store, fingerprint and split spec, the last
#: four (a report asks for them a dozen times): a fingerprint names one log's content, so a
#: memo cannot go stale.
_COPIES: OrderedDict[tuple[str, str, str], tuple[Interactions, Split]] = OrderedDict()


def _from_copy(row: dict[str, Any]) -> Interactions:
    from recaudit.data import read_parquet

    with tempfile.TemporaryDirectory(prefix="recaudit-log-") as tmp:
        path = Path(tmp) / "log.parquet"
        path.write_bytes(bytes(row["log"]))
        return read_parquet(path, name=str(row["dataset"]))


def audit_data(s: AuditStore, dataset: str, fingerprint: str | None,
               data: DataPaths = None) -> tuple[Interactions, Split]:
    """The filtered log and split the trials of ``dataset`` (with ``fingerprint``) ran on,
    from the first source of the module docstring's that has them.

    Raises :class:`~recaudit.errors.DataError` when no source has them (saying where it
    looked), or the file found holds other data than the trials saw."""
    spec, split = _stored(s, dataset, fingerprint)
    named = _named(spec, split, fingerprint, data)
    if named is not None:
        return prepare(named, split)
    memo = (str(Path(s.path).resolve()), str(fingerprint), canonical_json(split))
    if memo in _COPIES:
        _COPIES.move_to_end(memo)
        return _COPIES[memo]
    kept = _kept(s, fingerprint)
    if kept is not None and kept.get("log") is not None:
        copy = _from_copy(kept)
        if copy.fingerprint() == fingerprint:
            _COPIES[memo] = copy, split_log(copy, split, dataset)
            while len(_COPIES) > 4:
                _COPIES.popitem(last=False)
            return _COPIES[memo]
    found = data_file(s, dataset, fingerprint)
    try:
        got, parts = prepare(found, split)
    except RecauditError as exc:
        looked = list(dict.fromkeys(str(p.absolute()) for p in _candidates(s, spec, kept)))
        where = f" (looked at {', '.join(looked)})" if looked else ""
        why = getattr(exc, "message", None) or exc.one_line()
        raise DataError(f"the data of {dataset!r} cannot be read again{where}: {why}",
                        source=str(s.path),
                        hint="per-user figures need the audit's data, and this store keeps "
                             "no copy of it (written before copies were kept): name the "
                             "file with --data PATH") from None
    if fingerprint is not None and got.fingerprint() != fingerprint:
        raise DataError(f"the data of {dataset!r} at {found.path or found.name} has changed "
                        f"since the audit (fingerprint {got.fingerprint()[:12]}, the trials "
                        f"saw {fingerprint[:12]})", source=str(s.path),
                        hint="per-user figures need the very data the trials ran on: name "
                             "that file with --data PATH, restore it, or run the audit again")
    return got, parts


def check_paths(s: AuditStore, data: DataPaths, groups: Iterable[Any]) -> None:
    """Refuse a file in ``data`` that holds none of the datasets of ``groups`` (read as each
    one's trials read their file: same options, same filters), naming the fingerprints."""
    wanted = {(g.dataset, g.fingerprint) for g in groups}
    for path in _paths(data):
        if not path.exists():
            raise DataError("file not found", source=str(path),
                            hint="--data names the file the audit read, where it is now")
        seen = []
        for dataset, fp in sorted(wanted, key=str):
            spec, split = _stored(s, dataset, fp)
            if spec.path is None:
                continue  # a registered or synthetic dataset reads no file
            got = _fingerprint(spec, path, split)
            if got is not None and (fp is None or got == fp):
                break
            seen.append(f"{dataset!r} ({str(fp)[:12]}; this file gives "
                        f"{str(got)[:12] if got else 'nothing readable'})")
        else:
            raise DataError("holds none of the data the store's trials ran on: "
                            + ("; ".join(seen) if seen else "they ran on no file"),
                            source=str(path),
                            hint="name the file the audit read (after its options and "
                                 "filters it must give the trials' fingerprint)")


class StoreData:
    """The data of a store's groups for one question: each group's log and split found once
    (:func:`audit_data`), with the files the caller named (``data``, checked first against the
    store's datasets: :func:`check_paths`)."""

    def __init__(self, s: AuditStore, data: DataPaths = None,
                 groups: Iterable[Any] = ()) -> None:
        self.s, self.data = s, data
        self._found: dict[tuple[str, str | None], tuple[Interactions, Split]] = {}
        if _paths(data):
            check_paths(s, data, groups)

    def __call__(self, group: Any) -> tuple[Interactions, Split]:
        """The log and split of ``group`` (a :class:`recaudit.audit._users.Group`)."""
        key = (group.dataset, group.fingerprint)
        if key not in self._found:
            self._found[key] = audit_data(self.s, group.dataset, group.fingerprint, self.data)
        return self._found[key]
