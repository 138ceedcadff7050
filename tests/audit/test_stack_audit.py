"""An audit with ``executor.stack``: trials of one baseline trained as one stacked model give
the numbers and trial ids of the same audit trained one trial at a time."""

import json

import pandas as pd
import pytest

from recaudit.audit import (AuditConfig, AuditStore, DatasetSpec, ExecutorSpec, MetricSpec,
                            ModelSpec, run_audit)
from recaudit.experiment import Stacked, Trial, stacks

DATA = DatasetSpec("synthetic", options={"n_users": 40, "n_items": 30, "n_clusters": 4,
                                         "mean_length": 14, "seed": 5})
GRU = ModelSpec("gru4rec", {"epochs": 2, "embedding_dim": 8, "hidden_dim": 8, "batch_size": 32})
PERTURBATIONS = ("random-delete", "earliest-random-delete", "seed-only",
                 "random-replace-random")


def _config(tmp_path, name, executor, model=GRU, **kw):
    return AuditConfig(models=(model,), seeds=(0, 1), datasets=(DATA,),
                       perturbations=PERTURBATIONS, metrics=MetricSpec(k=5),
                       executor=executor, output=str(tmp_path / name), **kw)


def _results(path) -> tuple[pd.DataFrame, pd.DataFrame]:
    with AuditStore(path, read_only=True) as store:
        trials = store.sql("SELECT trial_id, perturbation, seed, versions, fit_seconds "
                           "FROM trials ORDER BY trial_id")
        queries = store.sql("SELECT * FROM query_results ORDER BY trial_id, query")
    return trials, queries


@pytest.mark.parametrize("executor", [ExecutorSpec(stack=3),
                                      ExecutorSpec("process", 2, stack=2)],
                         ids=["in-process stack 3", "pool of 2, stack 2"])
def test_a_stacked_audit_gives_the_numbers_of_one_trial_at_a_time(tmp_path, executor):
    one = run_audit(_config(tmp_path, "one.duckdb", ExecutorSpec()))
    stacked = run_audit(_config(tmp_path, "stacked.duckdb", executor))
    t1, q1 = _results(one)
    t2, q2 = _results(stacked)
    assert list(t1.trial_id) == list(t2.trial_id) and len(t1) == 2 * len(PERTURBATIONS)
    pd.testing.assert_frame_equal(q1, q2)
    sizes = [json.loads(v).get("stack") for v in t2.versions]
    assert all(json.loads(v).get("stack") is None for v in t1.versions)
    # each seed's four trials form stacks of at most executor.stack
    assert set(sizes) <= {str(n) for n in range(2, executor.stack + 1)} | {None}
    assert sizes.count(str(executor.stack)) >= executor.stack


def test_a_stack_resumes_with_the_trials_it_has_not_stored(tmp_path):
    cfg = _config(tmp_path, "a.duckdb", ExecutorSpec(stack=4))
    run_audit(AuditConfig(**{**cfg.__dict__, "perturbations": PERTURBATIONS[:1]}))
    run_audit(cfg)
    t, q = _results(cfg.output)
    one = run_audit(_config(tmp_path, "one.duckdb", ExecutorSpec()))
    t1, q1 = _results(one)
    assert list(t.trial_id) == list(t1.trial_id)
    pd.testing.assert_frame_equal(q, q1)


def test_models_that_cannot_share_a_stack_train_one_by_one(tmp_path):
    """A stabilised model (an ensemble of members here) has no stack: the trials run as they
    would alone."""
    cf = ModelSpec("gru4rec", GRU.params, stabilise={"method": "ensemble", "n": 2})
    one = run_audit(_config(tmp_path, "one.duckdb", ExecutorSpec(), model=cf))
    stacked = run_audit(_config(tmp_path, "stacked.duckdb", ExecutorSpec(stack=4), model=cf))
    t1, q1 = _results(one)
    t2, q2 = _results(stacked)
    pd.testing.assert_frame_equal(q1, q2)
    assert all(json.loads(v).get("stack") is None for v in t2.versions)


def test_stacks_cut_each_group_in_plan_order():
    trials = [Trial(str(i), None, group=g) for i, g in enumerate("aabaaba")] + \
        [Trial("x", None)]
    out = stacks(trials, 2)
    assert [[t.id for t in s] for s in out] == [["0", "1"], ["2", "5"], ["3", "4"], ["6"],
                                                ["x"]]
    assert all(len(s) <= 2 and len({t.group for t in s}) == 1 for s in out)
    assert [[t.id for t in s] for s in stacks(trials, 1)] == [[t.id] for t in trials]
    assert isinstance(Stacked([1]), list)


def test_executor_stack_is_validated():
    from recaudit.errors import ConfigError

    with pytest.raises(ConfigError, match="stack"):
        ExecutorSpec(stack=0)
    assert AuditConfig.from_dict({"models": ["gru4rec"], "executor": {"stack": 8}}
                                 ).executor.stack == 8
