"""Issue 47, item 8: a log given with ISO timestamps is shown with dates and durations, not
raw epoch seconds: recency slices are labelled with durations, ``most_changed``'s recency is
a duration, an edit's time is the date the data wrote; the commands print them so."""

from __future__ import annotations

import json
import re

import numpy as np
import pandas as pd
import pytest

from recaudit.audit import changes, most_changed, slices
from recaudit.data import duration_text

from ._entry import recaudit_here, with_model


@pytest.fixture(scope="module")
def dated(tmp_path_factory):
    """40 listeners' plays written with ISO 8601 times an hour apart (from 2022-03-01), a
    random deletion audited on a popularity model: the rows as written, and the store."""
    folder = tmp_path_factory.mktemp("dated")
    rng = np.random.default_rng(3)
    rows = []
    for u in range(40):
        start = pd.Timestamp("2022-03-01", tz="UTC") + pd.Timedelta(days=int(rng.integers(0, 90)))
        for t in range(int(rng.integers(8, 20))):
            when = start + pd.Timedelta(hours=t)
            rows.append((f"u{u:02d}", f"song{int(rng.integers(30))}",
                         when.strftime("%Y-%m-%dT%H:%M:%SZ")))
    log = pd.DataFrame(rows, columns=["user", "item", "timestamp"])
    log.to_csv(folder / "plays.csv", index=False)
    proc = recaudit_here("audit", "--dataset", "plays.csv", "--model", with_model(folder),
                         "-p", "random-delete", "--seeds", "2", "--k", "5",
                         "--min-interactions", "0", "-o", "d.duckdb", cwd=folder)
    assert proc.returncode == 0, proc.stderr
    return folder, log, folder / "d.duckdb"


def test_recency_slices_are_labelled_with_durations(dated, monkeypatch):
    folder, log, store = dated
    monkeypatch.chdir(folder)
    frame = slices(store, "recency")
    for r in frame.itertuples():
        assert r.slice == f"[{duration_text(r.low)}, {duration_text(r.high)}]"
        assert re.fullmatch(r"\[[\d.]+ (s|min|h|d|y), [\d.]+ (s|min|h|d|y)\]", r.slice)
    # the largest recency: the first listener to stop, up to the training log's end
    train_end = pd.to_datetime(log.timestamp).max()  # an upper bound: the last play of all
    assert frame.high.max() <= (train_end - pd.to_datetime(log.timestamp).min()).total_seconds()
    text = recaudit_here("slices", "d.duckdb", "--by", "recency", cwd=folder).stdout
    assert all(label in text for label in frame.slice)
    assert not re.search(r"\[\d{6,}", text)  # no raw seconds


def test_the_most_changed_users_recency_is_a_duration(dated, monkeypatch):
    folder, _, store = dated
    monkeypatch.chdir(folder)
    worst = most_changed(store, 3)
    assert pd.api.types.is_timedelta64_dtype(worst.recency)
    shown = recaudit_here("changes", "d.duckdb", "--worst", "3", cwd=folder).stdout
    for r in worst.itertuples():
        assert f"recency {duration_text(r.recency.total_seconds())}" in shown
    rows = json.loads(recaudit_here("changes", "d.duckdb", "--worst", "3", "-f", "json",
                                    cwd=folder).stdout)
    assert [pd.Timedelta(r["recency"]) for r in rows] == list(worst.recency)  # ISO 8601


def test_an_edit_is_at_the_time_the_data_wrote(dated, monkeypatch):
    folder, log, store = dated
    monkeypatch.chdir(folder)
    user = most_changed(store, 1).user.iloc[0]
    found = changes(store, user, perturbation="random-delete")
    edited = [x for c in found for x in c.edit.interactions]
    assert edited
    written = set(zip(log.user, log.item, log.timestamp))
    for x in edited:  # the deleted play, as plays.csv has it
        assert (x["user"], x["item"], x["time"]) in written
        assert isinstance(x["timestamp"], (int, float))  # the number too, for programs
    text = " ".join(recaudit_here("changes", "d.duckdb", "--user", str(user), "-p",
                                  "random-delete", cwd=folder).stdout.split())
    assert f"at {edited[0]['time']}" in text
