"""Heartbeats: what each running trial is doing (phase, epoch, time left), for ``recaudit
status``; the reports that feed them (:mod:`recaudit._progress`) change nothing computed."""

import json
import logging
import os
import subprocess
import sys
import time

import numpy as np
import pytest

from recaudit import _progress
from recaudit.data import synthetic, temporal_ratio_split
from recaudit.experiment import Heartbeat, heartbeats
from recaudit.experiment._heartbeat import clear_heartbeats, heartbeat_dir
from recaudit.models import create


def test_reports_go_to_the_watcher_of_the_block_only():
    _progress.report(phase="nobody listens")            # no watcher: nothing happens
    outer, inner = [], []
    with _progress.reporting(outer.append):
        _progress.epoch(1, 3)
        with _progress.reporting(inner.append):
            _progress.report(phase="fit")
        _progress.epoch(2, 3)
    _progress.epoch(3, 3)
    assert outer == [{"epoch": 1, "epochs": 3}, {"epoch": 2, "epochs": 3}]
    assert inner == [{"phase": "fit"}]


def test_a_heartbeat_holds_the_phase_and_epoch_while_the_block_runs(tmp_path):
    store = tmp_path / "s.duckdb"
    folder = heartbeat_dir(store)
    with Heartbeat(folder, "t1", every=0.0):
        _progress.report(label="lstm · random-delete · seed 0", phase="perturbed fit")
        _progress.epoch(3, 10)
        (beat,) = heartbeats(store)
        assert beat["trial_id"] == "t1" and beat["pid"] == os.getpid()
        assert beat["phase"] == "perturbed fit" and (beat["epoch"], beat["epochs"]) == (3, 10)
        assert beat["label"] == "lstm · random-delete · seed 0"
        # the phase's seconds per epoch so far, times the 7 epochs left
        assert beat["remaining"] == pytest.approx(beat["elapsed"] / 3 * 7)
        _progress.report(phase="perturbed ranking")         # a new phase forgets the epochs
        (beat,) = heartbeats(store)
        assert beat["phase"] == "perturbed ranking" and "epoch" not in beat
        assert "remaining" not in beat
    assert heartbeats(store) == [] and list(folder.iterdir()) == []   # removed at the end


def test_a_resumed_fit_with_early_stopping_counts_its_own_epochs(tmp_path):
    """A fit taken up after its kept epoch 30 has run 3 epochs in this process: the time
    left is per epoch of those 3; with early stopping due at epoch 40, the time until then
    comes too; a new phase forgets both."""
    from recaudit.cli._stores import _in_flight

    store = tmp_path / "s.duckdb"
    with Heartbeat(heartbeat_dir(store), "t1", every=0.0):
        _progress.report(label="sasrec · seed-only · seed 0", phase="baseline fit")
        _progress.resumed(30, 300)
        _progress.epoch(33, 300, stop_by=40)
        (beat,) = heartbeats(store)
        assert beat["resumed_at"] == 30 and beat["stop_by"] == 40
        per_epoch = beat["elapsed"] / 3
        assert beat["remaining"] == pytest.approx(per_epoch * 267)
        assert beat["remaining_if_stopped"] == pytest.approx(per_epoch * 7)
        line = _in_flight({**beat, "elapsed": 60.0, "remaining": 5340.0,
                           "remaining_if_stopped": 140.0})
        assert line == ("sasrec · seed-only · seed 0: baseline fit, epoch 33/300 (resumed "
                        "after epoch 30) for 60 s, about 2 min left if it stops at epoch 40 "
                        "(no better validation), at most 89 min")
        _progress.report(phase="baseline ranking")
        (beat,) = heartbeats(store)
        assert not {"resumed_at", "stop_by", "remaining_if_stopped"} & set(beat)


def test_the_training_loop_reports_when_early_stopping_would_end_it():
    """``stop_by`` after each epoch is ``epoch + patience - epochs without improvement``,
    and the last report of a fit that stopped early names its own epoch."""
    train = temporal_ratio_split(synthetic(seed=3, n_users=40, n_items=30), 0.8).train
    reports = []
    model = create("sasrec", epochs=12, patience=2, embedding_dim=8, batch_size=32)
    with _progress.reporting(reports.append):
        model.fit(train, seed=0)
    values = [r["valid_ndcg@10"] if "valid_ndcg@10" in r else r["valid_mrr"]
              for r in model.history_]
    best, stale = -1.0, 0
    for r, value in zip(reports, values, strict=False):
        best, stale = (value, 0) if value > best else (best, stale + 1)
        assert r["stop_by"] == min(r["epoch"] + 2 - stale, 12), (r, stale)
    assert len(reports) == len(values) == 8          # it stopped early (data and seed fixed)
    assert reports[-1]["stop_by"] == reports[-1]["epoch"] == 8
    assert [r["stop_by"] for r in reports[:3]] == [3, 3, 5]   # no gain at 2, a gain at 3


def test_a_heartbeat_is_removed_when_the_trial_fails(tmp_path):
    folder = tmp_path / "beats"
    with pytest.raises(RuntimeError, match="the fit failed"), Heartbeat(folder, "t2"):
        _progress.report(phase="perturbed fit")
        raise RuntimeError("the fit failed")
    assert list(folder.iterdir()) == []


def test_writes_are_throttled_but_a_phase_change_is_always_written(tmp_path):
    folder = tmp_path / "beats"
    with Heartbeat(folder, "t3", every=3600.0):
        _progress.report(phase="baseline fit")
        _progress.epoch(1, 50)                              # within the hour: not written
        on_disk = json.loads((folder / "t3.json").read_text())
        assert on_disk["phase"] == "baseline fit" and "epoch" not in on_disk
        _progress.report(phase="perturbing")
        assert json.loads((folder / "t3.json").read_text())["phase"] == "perturbing"


def test_dead_workers_heartbeats_are_ignored_then_cleared(tmp_path):
    store = tmp_path / "s.duckdb"
    folder = heartbeat_dir(store)
    folder.mkdir()
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True).stdout.strip()
    (folder / "old.json").write_text(json.dumps({"trial_id": "old", "pid": int(dead),
                                                 "phase": "perturbed fit",
                                                 "phase_started": time.time()}))
    (folder / "torn.json").write_text("{not json")
    assert heartbeats(store) == []
    clear_heartbeats(store)
    assert not folder.exists()


def test_an_unwritable_heartbeat_never_fails_the_trial(tmp_path, caplog):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    with caplog.at_level(logging.INFO), Heartbeat(blocker / "beats", "t4", every=0.0):
        _progress.report(phase="perturbed fit")
        _progress.epoch(1, 2)
    assert sum("cannot write the heartbeat" in r.message for r in caplog.records) == 1


@pytest.mark.parametrize("name,params", [
    ("lstm", dict(epochs=3, embedding_dim=8, hidden_dim=8)),
    ("latentcross", dict(epochs=3, embedding_dim=8, hidden_dim=8, samples="history")),
    ("jodie", dict(epochs=3, embedding_dim=8)),
])
def test_the_sequential_models_report_each_epoch_and_train_the_same(name, params):
    train = temporal_ratio_split(synthetic(seed=2, n_users=30, n_items=20, n_clusters=5)).train
    calls = []
    with _progress.reporting(calls.append):
        watched = create(name, **params).fit(train, seed=0)
    plain = create(name, **params).fit(train, seed=0)
    assert calls == [{"epoch": e, "epochs": 3} for e in (1, 2, 3)]
    np.testing.assert_array_equal(watched.rank(train, k=5).items, plain.rank(train, k=5).items)


def test_a_trial_reports_its_phases_in_order():
    from recaudit.audit import AuditConfig, DatasetSpec, MetricSpec, ModelSpec
    from recaudit.audit._runner import run_trial

    cfg = AuditConfig(name="hb", seeds=(0,),
                      datasets=(DatasetSpec("synthetic", options={"n_users": 60}),),
                      models=(ModelSpec("gru4rec", {"epochs": 2, "embedding_dim": 8,
                                                    "hidden_dim": 8}),),
                      perturbations=("random-delete",), metrics=MetricSpec(k=5))
    (trial,) = cfg.trials()
    calls = []
    with _progress.reporting(calls.append):
        run_trial(trial)
    phases = [c["phase"] for c in calls if "phase" in c]
    assert phases == ["loading data", "baseline fit", "baseline ranking", "perturbing",
                      "perturbed fit", "perturbed ranking"]
    assert calls[0]["label"].startswith("gru4rec") and "random-delete" in calls[0]["label"]
    assert [c["epoch"] for c in calls if "epoch" in c] == [1, 2, 1, 2]


@pytest.mark.slow
def test_status_shows_each_running_trial_of_a_real_run(tmp_path):
    """The whole chain: a worker process's model reports its epochs, the heartbeat file
    says so, ``recaudit status`` prints it; the run's end removes the heartbeats."""
    store = tmp_path / "a.duckdb"
    entry = ("import sys; from recaudit.cli import _entry; sys.argv[0] = 'recaudit'; "
             "sys.exit(_entry())")
    proc = subprocess.Popen(
        [sys.executable, "-c", entry, "audit", "--dataset", "synthetic", "--model", "gru4rec",
         "-p", "random-delete", "--seeds", "1", "--param", "epochs=8", "--output",
         str(store)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    seen, deadline = "", time.monotonic() + 180
    try:
        while time.monotonic() < deadline and proc.poll() is None:
            beats = heartbeats(store)
            if any("epoch" in b for b in beats):
                seen = subprocess.run([sys.executable, "-c", entry, "status", str(store)],
                                      capture_output=True, text=True, timeout=120).stdout
                if "epoch" in seen:
                    break
            time.sleep(0.2)
        out, err = proc.communicate(timeout=300)
    finally:
        proc.kill()
    assert proc.returncode == 0, err
    flat = " ".join(seen.split())  # status wraps its lines at the terminal's width
    assert "running gru4rec" in flat and "random-delete" in flat and "/8 for" in flat, seen
    assert not heartbeat_dir(store).exists()
