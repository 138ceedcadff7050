"""An audit with ``executor.stack``: trials of one baseline trained as one stacked model give
the numbers and trial ids of the same audit trained one trial at a time."""

import json
import time

import pandas as pd
import pytest

from recaudit.audit import (AuditConfig, AuditStore, DatasetSpec, ExecutorSpec, MetricSpec,
                            ModelSpec, run_audit)
from recaudit.experiment import Stacked, Trial, shared_trials, stacks

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


@pytest.fixture(scope="module")
def one_at_a_time(tmp_path_factory):
    """The audit trained one trial at a time, in-process: what every stacked run of this
    module must give (read only)."""
    return _results(run_audit(_config(tmp_path_factory.mktemp("one"), "one.duckdb",
                                      ExecutorSpec())))


@pytest.mark.parametrize("executor", [ExecutorSpec(stack=3),
                                      ExecutorSpec("process", 2, stack=2)],
                         ids=["in-process stack 3", "pool of 2, stack 2"])
def test_a_stacked_audit_gives_the_numbers_of_one_trial_at_a_time(tmp_path, executor,
                                                                   one_at_a_time):
    stacked = run_audit(_config(tmp_path, "stacked.duckdb", executor))
    t1, q1 = one_at_a_time
    t2, q2 = _results(stacked)
    assert list(t1.trial_id) == list(t2.trial_id) and len(t1) == 2 * len(PERTURBATIONS)
    pd.testing.assert_frame_equal(q1, q2)
    sizes = [json.loads(v).get("stack") for v in t2.versions]
    assert all(json.loads(v).get("stack") is None for v in t1.versions)
    # each seed's four trials form stacks of at most executor.stack
    assert set(sizes) <= {str(n) for n in range(2, executor.stack + 1)} | {None}
    assert sizes.count(str(executor.stack)) >= executor.stack


def test_a_stack_resumes_with_the_trials_it_has_not_stored(tmp_path, one_at_a_time):
    cfg = _config(tmp_path, "a.duckdb", ExecutorSpec(stack=4))
    run_audit(AuditConfig(**{**cfg.__dict__, "perturbations": PERTURBATIONS[:1]}))
    run_audit(cfg)
    t, q = _results(cfg.output)
    t1, q1 = one_at_a_time
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


def test_status_shows_the_trials_of_a_stack_on_one_line():
    from recaudit.cli._stores import _running

    beats = [{"trial_id": "t1", "label": "gru4rec · seed-only · seed 0", "phase": "perturbed fit",
              "epoch": 3, "epochs": 10, "elapsed": 30.0, "remaining": 70.0,
              "stack": {"size": 2, "index": 1, "first": "t0"}},
             {"trial_id": "t0", "label": "gru4rec · random-delete · seed 0",
              "phase": "perturbed fit", "epoch": 3, "epochs": 10, "elapsed": 30.0,
              "remaining": 70.0, "stack": {"size": 2, "index": 0, "first": "t0"}},
             {"trial_id": "t9", "label": "lstm · random-delete · seed 1", "phase": "baseline fit",
              "elapsed": 5.0}]
    lines = _running(beats)
    assert lines[0].startswith("lstm · random-delete · seed 1: baseline fit for ")
    assert lines[1].startswith("stack of 2: perturbed fit, epoch 3/10")
    assert lines[1].endswith(": gru4rec · random-delete · seed 0; gru4rec · seed-only · seed 0")


def test_each_member_of_a_running_stack_has_its_heartbeat(tmp_path):
    """While a stack runs, every member's heartbeat names the stack; what a member reports
    inside ``progress.member`` reaches its own heartbeat only."""
    from recaudit import _progress
    from recaudit.experiment._study import _call_stack

    seen = {}

    def run_stack(jobs):
        for i, job in enumerate(jobs):
            with _progress.member(i):
                _progress.report(label=f"trial {job}", phase="perturbing")
        _progress.report(phase="perturbed fit")
        time.sleep(1.05)  # a heartbeat is written at most once a second, phase changes aside
        _progress.epoch(2, 5)
        for path in sorted((tmp_path / "beats").glob("*.json")):
            seen[path.stem] = json.loads(path.read_text())
        return [f"outcome {j}" for j in jobs]

    trials = [Trial(f"id{i}", i, group="g") for i in range(3)]
    out = _call_stack(run_stack, str(tmp_path / "beats"), None, trials)
    assert out == ["outcome 0", "outcome 1", "outcome 2"] and isinstance(out, Stacked)
    assert sorted(seen) == ["id0", "id1", "id2"]
    for i in range(3):
        beat = seen[f"id{i}"]
        assert beat["label"] == f"trial {i}" and beat["phase"] == "perturbed fit"
        assert beat["epoch"] == 2 and beat["stack"] == {"size": 3, "index": i, "first": "id0"}
    assert not list((tmp_path / "beats").glob("*.json"))  # removed when the stack ends


def test_a_store_written_before_a_models_numbers_changed_resumes_and_merges(tmp_path,
                                                                            monkeypatch):
    """Stores written by an earlier version of a model's arithmetic: their trials stay (ids
    are the spec's), new trials record the new version and train their own baselines (the
    cache keeps one per version), and merging two stores says which shared trials differ."""
    from pathlib import Path

    from recaudit.models.sequential import GRU4Rec

    cfg = _config(tmp_path, "old.duckdb", ExecutorSpec())
    first = AuditConfig(**{**cfg.__dict__, "perturbations": PERTURBATIONS[:2]})
    with monkeypatch.context() as m:
        m.setattr(GRU4Rec, "implementation", 1)          # the version before the change
        run_audit(first)
    old, _ = _results(cfg.output)
    cache = Path(cfg.output + ".baselines")
    before = {p.name for p in cache.iterdir()}
    run_audit(cfg)                                        # resumed by this version
    t, _ = _results(cfg.output)
    assert set(old.trial_id) < set(t.trial_id) and len(t) == 2 * len(PERTURBATIONS)
    versions = {r.trial_id: json.loads(r.versions)["implementation"] for r in t.itertuples()}
    assert {versions[i] for i in old.trial_id} == {"1 (recurrence native)"}
    assert {v for i, v in versions.items() if i not in set(old.trial_id)} == \
        {"2 (recurrence native)"}
    after = {p.name for p in cache.iterdir()}
    assert any(".v2" in name for name in after - before)  # baselines of this version apart
    fresh = run_audit(_config(tmp_path, "new.duckdb", ExecutorSpec()))
    with AuditStore(fresh, read_only=True) as store:
        agreement = {a.table: a for a in shared_trials(store, cfg.output)}["query_results"]
    assert agreement.shared == len(t)
    # the old trials were trained by the same code here: they agree; a real change of
    # arithmetic would list them as differing, with their versions saying why
    assert agreement.differing == ()
