"""The data an audit ran on (``audit/_data.py``): the store keeps a copy, so who-is-affected
needs the store alone; a store without one finds the file where the audit read it, from any
folder, or where ``data=`` (``--data``) says it went, checked by fingerprint."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import duckdb
import pandas as pd
import pytest

from recaudit.audit import changes, exposure, most_changed, slices
from recaudit.audit._data import audit_data
from recaudit.audit._users import groups, opened
from recaudit.errors import DataError


def _copy(who_audit, folder: Path, sql: str = "", relative: bool = False) -> Path:
    """The fixture's store alone, copied to ``folder`` and changed by ``sql``; ``relative``:
    its trials name their file ``log.csv``, as an audit run with ``--dataset log.csv`` does."""
    folder.mkdir(parents=True, exist_ok=True)
    store = folder / "a.duckdb"
    shutil.copy(who_audit.store, store)
    con = duckdb.connect(str(store))
    if relative:
        for tid, spec in con.execute("SELECT trial_id, spec FROM trials").fetchall():
            spec = json.loads(spec)
            spec["dataset"]["path"] = "log.csv"
            con.execute("UPDATE trials SET spec = ? WHERE trial_id = ?", [json.dumps(spec), tid])
    if sql:
        con.execute(sql)
    con.close()
    return store


def _who(store, **kw) -> dict[str, pd.DataFrame]:
    """Every per-user figure of ``store``, as frames."""
    lists = changes(store, "u10", perturbation="seed-only", **kw)
    return {"slices": slices(store, ["activity", "popularity", "recency"], **kw),
            "exposure": exposure(store, **kw).summary,
            "items": exposure(store, **kw).items,
            "worst": most_changed(store, 3, **kw),
            "changes": pd.DataFrame([c.to_dict() for c in lists]).astype(str)}


@pytest.fixture(scope="module")
def reference(who_audit) -> dict[str, pd.DataFrame]:
    return _who(who_audit.store)


def _same(got: dict[str, pd.DataFrame], want: dict[str, pd.DataFrame]) -> None:
    for name, frame in want.items():
        pd.testing.assert_frame_equal(got[name], frame, obj=name)


def test_the_store_keeps_the_log_its_trials_ran_on(who_audit, tmp_path):
    from recaudit.data import read_parquet

    con = duckdb.connect(str(who_audit.store), read_only=True)
    rows = con.execute("SELECT * FROM datasets").df()
    fps = {r[0] for r in con.execute("SELECT DISTINCT data_fingerprint FROM trials").fetchall()}
    con.close()
    assert set(rows.data_fingerprint) == fps and len(rows) == 1
    row = rows.iloc[0]
    assert row.dataset == "mine" and Path(row.resolved_path).is_absolute()
    assert Path(row.resolved_path) == (who_audit.store.parent / "log.csv").resolve()
    (tmp_path / "log.parquet").write_bytes(bytes(row.log))
    log = read_parquet(tmp_path / "log.parquet")
    assert log.fingerprint() == row.data_fingerprint and len(log) == row.interactions
    assert sorted(log.user_ids.tolist()) == sorted(who_audit.log.user.unique().tolist())


def test_who_is_affected_needs_the_store_alone(who_audit, reference, tmp_path, monkeypatch):
    """The store copied to another folder and opened from a third: the same figures, and no
    file read (reading one fails here)."""
    import recaudit.audit._data as found

    store = _copy(who_audit, tmp_path / "elsewhere")
    monkeypatch.chdir(tmp_path)

    def no_file(*args, **kwargs):
        raise AssertionError("the data file was read")

    monkeypatch.setattr(found, "prepare", no_file)
    _same(_who(store), reference)


def test_a_store_without_a_copy_finds_its_file_from_any_folder(who_audit, reference,
                                                               tmp_path, monkeypatch):
    """A store written before copies were kept (no `datasets` table), whose trials name their
    file relatively: from the audit's folder, and next to the store from anywhere else."""
    store = _copy(who_audit, tmp_path / "run", "DROP TABLE datasets", relative=True)
    shutil.copy(who_audit.store.parent / "log.csv", tmp_path / "run" / "log.csv")
    monkeypatch.chdir(tmp_path / "run")
    _same(_who("a.duckdb"), reference)
    monkeypatch.chdir(tmp_path)
    _same(_who(store), reference)


def test_the_recorded_absolute_path_is_tried_first(who_audit, reference, tmp_path,
                                                   monkeypatch):
    """A store that records where its file was (no copy of the log: one whose ids Parquet
    cannot keep): opened from another folder, it reads the file at its absolute path."""
    data = tmp_path / "data"
    data.mkdir()
    shutil.copy(who_audit.store.parent / "log.csv", data / "log.csv")
    store = _copy(who_audit, tmp_path / "store", "UPDATE datasets SET log = NULL, "
                  f"resolved_path = '{data / 'log.csv'}'", relative=True)
    monkeypatch.chdir(tmp_path)
    _same(_who(store), reference)


def test_a_moved_file_is_named_with_data_and_checked(who_audit, reference, tmp_path,
                                                     monkeypatch):
    store = _copy(who_audit, tmp_path / "store", "DROP TABLE datasets", relative=True)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(DataError, match=r"(?s)cannot be read again \(looked at .*log.csv.*\).*"
                                        r"--data PATH"):
        exposure(store)
    moved = tmp_path / "archive" / "plays-2026.csv"
    moved.parent.mkdir()
    shutil.copy(who_audit.store.parent / "log.csv", moved)
    _same(_who(store, data=moved), reference)
    # another file (one interaction fewer) is refused, naming both fingerprints
    other = tmp_path / "other.csv"
    pd.read_csv(moved).iloc[1:].to_csv(other, index=False)
    with opened(store) as s:
        (g,) = {(g.dataset, g.fingerprint) for g in groups(s)}
    with pytest.raises(DataError, match=f"holds none of the data.*'mine' \\({g[1][:12]}; "
                                        "this file gives [0-9a-f]{12}\\)"):
        exposure(store, data=other)
    with pytest.raises(DataError, match="file not found"):
        slices(store, "activity", data=tmp_path / "nowhere.csv")


def test_a_changed_file_is_refused(who_audit, tmp_path, monkeypatch):
    store = _copy(who_audit, tmp_path / "store", "DROP TABLE datasets", relative=True)
    log = pd.read_csv(who_audit.store.parent / "log.csv")
    log.iloc[1:].to_csv(tmp_path / "store" / "log.csv", index=False)  # next to the store
    monkeypatch.chdir(tmp_path)
    with opened(store) as s:
        (g,) = groups(s)
        with pytest.raises(DataError, match="has changed since the audit"):
            audit_data(s, g.dataset, g.fingerprint)
