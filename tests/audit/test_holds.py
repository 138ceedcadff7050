"""Issue 60, item 5: a store holds one audit. An audit of other data (or another split, other
metrics) into it is refused, the dry run too; more seeds, perturbations or models extend it,
and the config it keeps describes every call (status, the report's title and setup); the
decisions of its rounds are read with the config of the call that ran them."""

from __future__ import annotations

from dataclasses import replace

import pytest

from recaudit.audit import (AuditConfig, AuditStore, DatasetSpec, MetricSpec, ModelSpec,
                            dry_run, run_audit)
from recaudit.cli import main
from recaudit.errors import ConfigError
from recaudit.experiment import Store


def _cfg(tmp_path, perts=("random-delete",), seeds=(0,), users=40, models=("gru4rec",)):
    return AuditConfig(datasets=(DatasetSpec("synthetic", options={"n_users": users,
                                                                   "n_items": 30}),),
                       models=tuple(ModelSpec(m, {"epochs": 1, "embedding_dim": 8})
                                    for m in models),
                       perturbations=perts, seeds=seeds, output=str(tmp_path / "a.duckdb"),
                       name="first")


def _meta(path):
    with Store(path, read_only=True) as st:
        return st.meta()


def test_an_audit_of_other_data_split_or_metrics_is_refused(tmp_path):
    cfg = _cfg(tmp_path)
    run_audit(cfg)
    before = _meta(cfg.output)["config"]
    for other, what in ((_cfg(tmp_path, users=50), "filtered or sampled otherwise"),
                        (replace(cfg, datasets=(DatasetSpec("ml-100k"),)), "data synthetic"),
                        (replace(cfg, metrics=MetricSpec(k=5)), "metrics k = 10")):
        with pytest.raises(ConfigError, match=what) as err:
            run_audit(other)
        assert "a.duckdb holds an audit of 'first'" in err.value.message
        assert "--output" in err.value.hint
        with pytest.raises(ConfigError, match=what):  # and the dry run says so first
            dry_run(other, calibrate=False)
    with AuditStore(cfg.output, read_only=True) as st:
        assert len(st.trials()) == 1                    # nothing of theirs was written
    assert _meta(cfg.output)["config"] == before


def test_more_seeds_perturbations_and_models_extend_the_store_it_describes(tmp_path):
    from recaudit.audit import default_name

    first = _cfg(tmp_path)
    run_audit(replace(first, name=default_name(first)))
    later = _cfg(tmp_path, perts=("seed-only",), seeds=(1,), models=("sasrec",))
    run_audit(replace(later, name=default_name(later)))
    kept = AuditConfig.from_dict(_meta(first.output)["config"])
    assert [m.name for m in kept.models] == ["gru4rec", "sasrec"]
    assert kept.perturbations == ("random-delete", "seed-only") and kept.seeds == (0, 1)
    assert kept.name == "gru4rec and sasrec on synthetic"   # a default name: named anew
    # a name of one's own is the latest call's
    run_audit(replace(later, name="mine"))
    assert _meta(first.output)["config"]["name"] == "mine"


def test_status_names_the_dataset_of_each_trial(tmp_path, capsys):
    cfg = _cfg(tmp_path)
    run_audit(cfg)
    assert main(["status", cfg.output]) == 0
    out = capsys.readouterr().out
    assert "dataset" in out and "synthetic" in out


def test_cli_refuses_another_dataset_into_a_store_and_its_dry_run(tmp_path, capsys):
    out = tmp_path / "s.duckdb"
    common = ["--model", "gru4rec", "--param", "epochs=1", "-p", "random-delete", "--seeds",
              "1", "-o", str(out)]
    assert main(["audit", "--dataset", "synthetic", "--sample-users", "60", *common]) == 0
    capsys.readouterr()
    for extra in ([], ["--dry-run"]):
        assert main(["audit", "--dataset", "synthetic", "--sample-users", "50", *common,
                     *extra]) == 2
        err = capsys.readouterr().err
        assert "holds an audit of 'gru4rec on synthetic'" in err and "sampled" in err


def test_the_rounds_are_read_with_the_config_of_their_call(tmp_path):
    # a plain call that adds a perturbation after an --until-decided call leaves the
    # decisions of its rounds as they were (before: read with the store's latest config,
    # they grew a comparison the rounds never decided)
    from recaudit.audit import decisions_of_rounds, run_until_decided
    from recaudit.stats import SequentialPlan

    cfg = _cfg(tmp_path, perts=("random-delete", "seed-only"), seeds=(0, 1, 2))
    run_until_decided(cfg, SequentialPlan(cap=3))
    frame, _, _ = decisions_of_rounds(cfg.output, AuditConfig.from_dict)
    more = replace(cfg, perturbations=("random-delete", "earliest-random-delete",
                                       "seed-only"))
    run_audit(more)
    again, _, _ = decisions_of_rounds(cfg.output, AuditConfig.from_dict)
    assert list(zip(again.a, again.b)) == list(zip(frame.a, frame.b)) == [
        ("random-delete", "seed-only")]
    kept = AuditConfig.from_dict(_meta(cfg.output)["config"])
    assert "earliest-random-delete" in kept.perturbations   # the store describes it all
