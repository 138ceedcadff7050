"""Perturbations whose edits reach the test inputs too (``+inputs``, Betello et al. 2023)."""

import dataclasses
import io

import numpy as np
import pandas as pd
import pytest
import torch
from rich.console import Console

from recaudit import _progress
from recaudit.audit import (AuditConfig, DatasetSpec, ExecutorSpec, MetricSpec, ModelSpec,
                            run_audit, trial_summary)
from recaudit.audit._runner import edited_queries, run_trial
from recaudit.data import Interactions, Queries
from recaudit.cli import main
from recaudit.cli._plan import _dry_run
from recaudit.errors import ConfigError
from recaudit.experiment import Store, fits_dir, kept_fits, prepare
from recaudit.metrics import mrr_batch
from recaudit.perturb import parse, remove_positions

TINY_DATA = DatasetSpec("synthetic", options={"n_users": 30, "n_items": 25, "n_clusters": 3,
                                              "mean_length": 12, "seed": 3})
TINY_MODEL = ModelSpec("gru4rec", {"epochs": 2, "embedding_dim": 8, "hidden_dim": 8,
                                   "batch_size": 64})


def _queries() -> Queries:
    # user 0 asks twice (t = 10, 20), user 1 once (t = 5)
    return Queries(user=[0, 0, 1], context_indptr=[0, 3, 6, 8],
                   context_item=[1, 3, 4, 1, 3, 4, 2, 5],
                   context_time=[1, 2, 3, 1, 2, 3, 1, 4],
                   target=[6, 7, 8], timestamp=[10, 20, 5], n_items=10, n_users=2)


def _contexts(q: Queries) -> list[list[tuple[int, int]]]:
    return [list(zip(q.context(i).tolist(),
                     q.context_time[q.context_indptr[i]:q.context_indptr[i + 1]].tolist()))
            for i in range(len(q))]


def test_edited_contexts_lose_removed_and_gain_added_entries_in_time_order():
    removed = Interactions.from_codes([0, 1], [3, 9], [2, 1], n_users=2, n_items=10)
    added = Interactions.from_codes([0, 0, 1, 1], [9, 8, 7, 6], [15, 3, 6, 5], n_users=2,
                                    n_items=10)
    got = _queries().edited(removed, added)
    # (0, 3, t2) leaves both of user 0's contexts; (1, 9, t1) matches nothing (item 2 is there).
    # (0, 9, t15) joins only the query at t = 20; (0, 8, t3) follows the kept entry at t = 3;
    # (1, 7, t6) is later than user 1's query (t = 5); (1, 6, t5) is not.
    assert _contexts(got) == [[(1, 1), (4, 3), (8, 3)],
                              [(1, 1), (4, 3), (8, 3), (9, 15)],
                              [(2, 1), (5, 4), (6, 5)]]
    q = _queries()
    assert np.array_equal(got.target, q.target) and np.array_equal(got.timestamp, q.timestamp)
    assert np.array_equal(got.user, q.user) and got.n_items == q.n_items


def test_no_edit_leaves_the_queries_unchanged():
    empty = Interactions.from_codes([], [], [], n_users=2, n_items=10)
    q = _queries()
    assert _contexts(q.edited(empty, empty)) == _contexts(q)
    log = Interactions.from_codes([0, 0, 1], [1, 3, 2], [1, 2, 1], n_users=2, n_items=10)
    assert _contexts(edited_queries(q, log, log)) == _contexts(q)


def test_edited_queries_reads_a_replacement_as_a_removal_and_an_addition():
    before = Interactions.from_codes([0, 0, 0, 1], [1, 3, 4, 2], [1, 2, 3, 1],
                                      n_users=2, n_items=10)
    after = Interactions.from_codes([0, 0, 0, 1], [1, 6, 4, 2], [1, 2, 3, 1],
                                     n_users=2, n_items=10)
    got = edited_queries(_queries(), before, after)
    assert _contexts(got)[0] == [(1, 1), (6, 2), (4, 3)]
    assert _contexts(got)[2] == _contexts(_queries())[2]


def test_inputs_suffix_parses_names_and_describes_itself():
    spec = parse("remove-end-3+inputs")
    assert spec.inputs and spec.n == 3 and spec.where == "end"
    assert spec.name == "remove-end-3+inputs" and parse(spec.name) == spec
    assert spec.needs.inputs and not parse("remove-end-3").needs.inputs
    assert spec.describe().family == "remove-end+inputs"
    assert parse("casper-replace-popular-k2+inputs").name == "casper-replace-popular-k2+inputs"
    assert parse({"name": "random-delete", "inputs": True}).name == "random-delete+inputs"
    assert parse("tracin-delete+inputs").needs.inputs
    with pytest.raises(ConfigError, match=r"only suffix is '\+inputs'"):
        parse("remove-end-3+input")
    with pytest.raises(ConfigError, match="edits nothing"):
        parse("seed-only+inputs")
    with pytest.raises(ConfigError, match="inputs"):
        parse({"kind": "none", "inputs": True})


def _keys(user, item, time):
    return list(zip(user.tolist(), item.tolist(), time.tolist()))


def test_the_perturbed_model_ranks_the_shortened_inputs(tmp_path):
    cfg = AuditConfig(models=(TINY_MODEL,), perturbations=("remove-end-2",
                                                           "remove-end-2+inputs"),
                      seeds=(0,), datasets=(TINY_DATA,), metrics=MetricSpec(k=5),
                      output=str(tmp_path / "a.duckdb"))
    plain, inputs = (run_trial(t, cache_dir=tmp_path / "b").queries for t in cfg.trials())

    # The same by hand, matching context entries with Python sets.
    _, split = prepare(TINY_DATA, cfg.split)
    q = split.queries
    train, record = remove_positions(split.train, "end", 2)
    gone = set(_keys(*(np.asarray(a)[list(record.deleted)] for a in
                       (split.train.user, split.train.item, split.train.timestamp))))
    lens = q.lengths()
    keep = np.array([k not in gone for k in _keys(np.repeat(q.user, lens), q.context_item,
                                                  q.context_time)])
    assert 0 < (~keep).sum() <= 2 * len(q)
    kept = np.bincount(np.repeat(np.arange(len(q)), lens)[keep], minlength=len(q))
    short = Queries(q.user, np.concatenate([[0], np.cumsum(kept)]), q.context_item[keep],
                    q.context_time[keep], q.target, q.timestamp, q.n_items, q.n_users)
    model = TINY_MODEL.create().fit(train, seed=0)
    depth = cfg.metrics.depth
    np.testing.assert_array_equal(inputs.mrr_pert, mrr_batch(model.rank(short, k=depth).items,
                                                             q.target))
    np.testing.assert_array_equal(plain.mrr_pert, mrr_batch(model.rank(q, k=depth).items,
                                                            q.target))
    np.testing.assert_array_equal(inputs.mrr_base, plain.mrr_base)  # the baseline: original
    assert not np.array_equal(inputs.rbo, plain.rbo)


def test_kept_fits_train_a_perturbation_and_its_inputs_twin_once(tmp_path, monkeypatch,
                                                                  capsys):
    """``[executor] keep_fits``: ``remove-end-2`` and ``remove-end-2+inputs`` train the same
    model on the same log, so the second trial takes the first one's finished fit; its
    numbers are those of a store that trained both."""
    epochs: list[int] = []
    real = _progress.epoch

    def count(done, total, stop_by=None):
        epochs.append(done)
        real(done, total, stop_by)

    monkeypatch.setattr(_progress, "epoch", count)
    perturbations = ("remove-end-2", "remove-end-2+inputs")
    both = AuditConfig(models=(TINY_MODEL,), perturbations=perturbations, seeds=(0,),
                       datasets=(TINY_DATA,), metrics=MetricSpec(k=5),
                       output=str(tmp_path / "both.duckdb"))
    run_audit(both)
    assert epochs == [1, 2] * 3                 # the baseline and each trial's own fit
    assert not list(fits_dir(both.output).glob("*"))
    epochs.clear()
    once = AuditConfig(models=(TINY_MODEL,), perturbations=perturbations[:1], seeds=(0,),
                       datasets=(TINY_DATA,), metrics=MetricSpec(k=5),
                       executor=ExecutorSpec(keep_fits=True),
                       output=str(tmp_path / "once.duckdb"))
    run_audit(once)
    assert epochs == [1, 2] * 2
    kept = kept_fits(once.output)              # the baseline's fit and the perturbed one
    assert len(kept) == 2 and all(f["finished"] and f["epoch"] == 2 for f in kept)
    # as if they had taken 1,000 s each to train (their time is kept in their state)
    for path in fits_dir(once.output).glob("*.pt"):
        state = torch.load(path, weights_only=True)
        torch.save({**state, "seconds": 1000.0}, path)
    epochs.clear()
    once = dataclasses.replace(once, perturbations=perturbations)
    run_audit(once)
    assert epochs == []                         # the twin trained no epoch

    def numbers(path):
        s = trial_summary(path)
        return s.drop(columns=["fit_seconds", "total_seconds"]).sort_values("trial_id") \
            .reset_index(drop=True)

    pd.testing.assert_frame_equal(numbers(once.output), numbers(both.output))
    # the twin's fit counts the 1,000 s it took when it was trained, and so does its total
    with Store(once.output, read_only=True) as store:
        s = store.sql("SELECT perturbation, fit_seconds, rank_seconds, total_seconds "
                      "FROM trials").set_index("perturbation")
    assert 1000 <= s.fit_seconds["remove-end-2+inputs"] < 1100
    assert (s.total_seconds >= s.fit_seconds + s.rank_seconds).all(), s
    assert main(["status", once.output]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert out.count("kept: a gru4rec fit (seed 0), finished after epoch 2 of 2") == 2, out
    assert "a trial that trains it again takes it instead" in out
    console = Console(file=io.StringIO(), width=300)
    _dry_run(once, console)
    out = " ".join(console.file.getvalue().split())
    assert out.count("kept: a gru4rec fit finished after epoch 2 of 2 (under a minute of "
                     "training done), which a trial that trains it takes instead") == 2, out


def test_audit_keep_fits_flag_keeps_the_finished_fits(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    args = ["audit", "--dataset", "synthetic", "--sample-users", "30", "--model", "gru4rec",
            "--param", "epochs=2", "--param", "hidden_dim=8", "-p", "remove-end-2",
            "-p", "remove-end-2+inputs", "--seeds", "1", "--k", "5", "-o", "a.duckdb"]
    assert main([*args, "--keep-fits"]) == 0
    assert [f["finished"] for f in kept_fits("a.duckdb")] == [True, True]
    assert main([*args[:-1], "b.duckdb"]) == 0
    assert kept_fits("b.duckdb") == []
