"""End-to-end audits on a tiny synthetic log with a tiny GRU4Rec."""

import os
import re
import signal
import subprocess
import sys
import textwrap
import time

import pandas as pd
import pytest

from recaudit.audit import (
    AuditConfig,
    DatasetSpec,
    ExecutorSpec,
    MetricSpec,
    ModelSpec,
    AuditStore,
    StoreBusyError,
    run_audit,
    trial_summary,
)

TINY_DATA = DatasetSpec("synthetic", options={"n_users": 40, "n_items": 30, "n_clusters": 4,
                                              "mean_length": 14, "seed": 5})
TINY_MODEL = ModelSpec("gru4rec", {"epochs": 2, "embedding_dim": 8, "hidden_dim": 8,
                                   "batch_size": 64})


def _config(tmp_path, name="a.duckdb", **kw):
    base = dict(models=(TINY_MODEL,), perturbations=("none", "random-delete"), seeds=(0, 1),
                datasets=(TINY_DATA,), metrics=MetricSpec(k=5), output=str(tmp_path / name))
    base.update(kw)
    return AuditConfig(**base)


def _numbers(path):
    s = trial_summary(path)
    return s.drop(columns=["fit_seconds", "total_seconds"]).sort_values("trial_id") \
        .reset_index(drop=True)


def test_no_perturbation_gives_rls_exactly_one_and_resume_skips(tmp_path):
    cfg = _config(tmp_path)
    events = []
    run_audit(cfg, progress=lambda e, t, d, n: events.append((e, d, n)))
    s = trial_summary(cfg.output)
    assert len(s) == 4
    none = s[s.perturbation == "none"]
    assert (none.rbo == 1.0).all() and (none.jaccard == 1.0).all() and (none.frbo == 1.0).all()
    assert (none.mrr_base == none.mrr_pert).all()
    deleted = s[s.perturbation == "random-delete"]
    assert (deleted.rbo < 1.0).all()  # one deleted interaction changes the lists
    # resume: nothing left to do, nothing re-run, same numbers
    events.clear()
    run_audit(cfg, progress=lambda e, t, d, n: events.append((e, d, n)))
    assert events == [("skip", 4, 4)]
    with AuditStore(cfg.output, read_only=True) as st:
        assert len(st.query_results()) == 4 * int(s.n_queries.iloc[0])
        rec = st.records()
    assert sum(r.get("kind") == "delete" or "delete" in str(r) for r in rec.values()) >= 2


@pytest.mark.slow
def test_process_pool_gives_identical_numbers(tmp_path):
    a = _config(tmp_path, "a.duckdb")
    b = _config(tmp_path, "b.duckdb", executor=ExecutorSpec("process", workers=2))
    run_audit(a)
    run_audit(b)
    pd.testing.assert_frame_equal(_numbers(a.output), _numbers(b.output))


_MODEL, _DATA = dict(TINY_MODEL.params), dict(TINY_DATA.options)
_KILL_SCRIPT = textwrap.dedent(f"""
    import sys
    from recaudit.audit import *
    cfg = AuditConfig(
        models=(ModelSpec("gru4rec", {_MODEL!r}),), datasets=(DatasetSpec("synthetic", options={_DATA!r}),),
        perturbations=("none", "random-delete", "latest-random-delete"), seeds=(0, 1, 2),
        metrics=MetricSpec(k=5), output=sys.argv[1] + "/a.duckdb")
    def progress(event, trial, done, total):
        print(event, done, flush=True)
    run_audit(cfg, progress=progress)
""")


@pytest.mark.slow
def test_sigkill_loses_no_finished_trial_and_leaves_no_half_written_one(tmp_path):
    repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    proc = subprocess.Popen([sys.executable, "-c", _KILL_SCRIPT, str(tmp_path)], cwd=repo,
                            stdout=subprocess.PIPE, text=True)
    reported = 0
    for line in proc.stdout:
        event, done = line.split()
        if event == "done":
            reported = int(done)
            if reported >= 2:
                time.sleep(0.3)  # kill somewhere inside the next trial
                break
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert reported >= 2
    with AuditStore(tmp_path / "a.duckdb", read_only=True) as st:
        trials = st.trials()
        q = st.query_results()
    assert len(trials) >= reported
    counts = q.groupby("trial_id").size()
    assert set(counts.index) == set(trials.trial_id)
    assert (counts.reindex(trials.trial_id).to_numpy() == trials.n_queries.to_numpy()).all()
    # resuming completes the audit with the numbers of an uninterrupted run
    cfg = _config(tmp_path, perturbations=("none", "random-delete", "latest-random-delete"),
                  seeds=(0, 1, 2))
    run_audit(cfg)
    fresh = _config(tmp_path, "fresh.duckdb", perturbations=cfg.perturbations, seeds=cfg.seeds)
    run_audit(fresh)
    pd.testing.assert_frame_equal(_numbers(cfg.output), _numbers(fresh.output))


def test_second_writer_gets_a_clear_error(tmp_path):
    path = tmp_path / "busy.duckdb"
    holder = subprocess.Popen(
        [sys.executable, "-c",
         "import sys, time, duckdb; c = duckdb.connect(sys.argv[1]); print('ready', flush=True);"
         " time.sleep(30)", str(path)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "ready"
        with pytest.raises(StoreBusyError, match="in use by another process"):
            AuditStore(path)
    finally:
        holder.kill()
        holder.wait()


def test_read_only_store_missing_is_a_clear_error(tmp_path):
    from recaudit.errors import RecauditError

    with pytest.raises(RecauditError, match="no results store"):
        AuditStore(tmp_path / "nope.duckdb", read_only=True)


def test_fuzzing_heuristics_run_as_audit_perturbations(tmp_path):
    """Shriver 2018's rating-level fuzzing through the audit engine: ZERO changes nothing, so a
    deterministic recommender's lists stay identical; AMU adds exactly M ratings for one
    user, never on a test pair."""
    import recaudit.fuzz._spec  # noqa: F401  registers fuzz: here (installs find its entry point)

    data = DatasetSpec("synthetic", options={"n_users": 40, "n_items": 30, "n_clusters": 4,
                                             "mean_length": 14, "seed": 5, "ratings": True})
    cfg = AuditConfig(models=(ModelSpec("item-item"),), datasets=(data,),
                      perturbations=("fuzz:ZERO:1", "fuzz:AMU:5"), seeds=(0,),
                      metrics=MetricSpec(k=5), output=str(tmp_path / "f.duckdb"))
    run_audit(cfg)
    s = trial_summary(cfg.output).set_index("perturbation")
    assert s.loc["fuzz:ZERO:1", "rbo"] == 1.0 and s.loc["fuzz:ZERO:1", "jaccard"] == 1.0
    with AuditStore(cfg.output, read_only=True) as st:
        records = st.records()
        trials = st.trials().set_index("perturbation")
    amu = records[trials.loc["fuzz:AMU:5", "trial_id"]]
    assert amu["kind"] == ["add"] * 5 and len(set(amu["user"])) == 1
    assert amu["n_rows_after"] == amu["n_rows_before"] + 5
    from recaudit.audit import prepare

    _, split = prepare(data, cfg.split)
    test_pairs = set(zip(split.test.user.tolist(), split.test.item.tolist()))
    assert not test_pairs & set(zip(amu["user"], amu["item"]))


def test_ctrl_c_while_a_trial_is_written_keeps_it_and_then_stops(tmp_path, monkeypatch):
    """A finished trial is finished work: a Ctrl-C that lands while the driver writes it to
    the store (a DuckDB query, which would swallow the interrupt and roll the write back)
    acts once the trial is written; a resume then reuses its baseline too."""
    import recaudit.audit._study as study
    from recaudit.errors import Interrupted

    cfg = _config(tmp_path, seeds=(0,))
    real = study.write_trial

    def write_trial(store, row, queries, record):
        signal.raise_signal(signal.SIGINT)      # the user presses Ctrl-C now
        return real(store, row, queries, record)

    monkeypatch.setattr(study, "write_trial", write_trial)
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with pytest.raises(Interrupted) as info:
            run_audit(cfg)
    finally:
        signal.signal(signal.SIGINT, previous)
    assert info.value.exit_code == 130
    assert len(trial_summary(cfg.output)) == 1     # written whole before the interrupt
    monkeypatch.undo()
    events = []
    run_audit(cfg, progress=lambda e, t, d, n: events.append((e, d, n)))
    assert events[:2] == [("baselines", 1, 1), ("skip", 1, 2)]  # the cached one, reused
    assert len(trial_summary(cfg.output)) == 2


def test_a_killed_audit_resumes_its_fit_in_flight_and_gets_the_same_numbers(tmp_path,
                                                                            monkeypatch,
                                                                            capsys):
    """Stopped in its first trial's perturbed fit, after that fit's state was kept
    (``<store>.fits.d``), the next run resumes that fit at its next epoch; the numbers are
    those of a run that was never stopped."""
    from recaudit import _progress
    from recaudit.errors import Interrupted
    from recaudit.cli import _saved, main
    from recaudit.experiment import fits_dir

    model = ModelSpec("gru4rec", {**TINY_MODEL.params, "epochs": 4})
    whole = _config(tmp_path, "whole.duckdb", models=(model,), seeds=(0,))
    run_audit(whole)
    cfg = _config(tmp_path, models=(model,), seeds=(0,))
    real, epochs = _progress.epoch, []

    def stop_in_second_fit(done, total, stop_by=None):   # the baseline: the first fit
        epochs.append(done)
        real(done, total, stop_by)
        if len(epochs) == 4 + 3:
            raise KeyboardInterrupt

    monkeypatch.setattr(_progress, "epoch", stop_in_second_fit)
    monkeypatch.setattr("recaudit._resume.EVERY", 0.0)   # keep the state after every epoch
    with pytest.raises(Interrupted):
        run_audit(cfg)
    assert len(list(fits_dir(cfg.output).glob("*.pt"))) == 1
    assert _saved(cfg.output, baselines=True) == (
        f"0 finished trials and 1 trained baseline saved in {cfg.output}, with the state of 1 "
        "fit in flight at its last kept epoch; run the same command again to resume")
    assert main(["status", cfg.output]) == 0
    assert re.search(r"kept: a gru4rec fit \(seed 0\) at epoch 3 of 4 \(\d+ s of training\), ",
                     " ".join(capsys.readouterr().out.split()))
    epochs.clear()
    run_audit(cfg)
    assert epochs[:2] == [4, 1]    # the stopped fit's last epoch, then the other trial's fits
    assert list(fits_dir(cfg.output).iterdir()) == []
    pd.testing.assert_frame_equal(_numbers(cfg.output), _numbers(whole.output))
