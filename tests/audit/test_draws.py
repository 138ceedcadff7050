"""Repeated perturbation draws against one trained baseline (``draws``; Oh et al. 2022 Table 4)."""

import json

import duckdb
import pytest

from recaudit.audit import (AuditConfig, DatasetSpec, MetricSpec, ModelSpec, AuditStore, run_audit,
                            trial_summary)
from recaudit.audit._engine import plan
from recaudit.errors import ConfigError

TINY_DATA = DatasetSpec("synthetic", options={"n_users": 40, "n_items": 30, "n_clusters": 4,
                                              "mean_length": 14, "seed": 5})
TINY_MODEL = ModelSpec("gru4rec", {"epochs": 2, "embedding_dim": 8, "hidden_dim": 8,
                                   "batch_size": 64})


def _config(tmp_path, **kw):
    base = dict(models=(TINY_MODEL,), seeds=(0,), datasets=(TINY_DATA,),
                metrics=MetricSpec(k=5), output=str(tmp_path / "a.duckdb"))
    base.update(kw)
    return AuditConfig(**base)


def test_draws_are_trials_of_their_own_against_one_baseline(tmp_path, monkeypatch):
    import recaudit.audit._runner as runner

    cfg = _config(tmp_path, perturbations=("random-delete",), seeds=(0,), draws=3)
    planned = plan(cfg)
    assert [t.draw for t, _, _ in planned] == [0, 1, 2]
    assert len({tid for _, tid, _ in planned}) == 3
    assert len({key for _, _, key in planned}) == 1          # one baseline for the three
    trained = []
    real = runner.train_baseline
    monkeypatch.setattr(runner, "train_baseline",
                        lambda *a, **kw: trained.append(1) or real(*a, **kw))
    run_audit(cfg)
    assert trained == [1]                                     # the baseline was trained once
    s = trial_summary(cfg.output)
    assert sorted(s.draw) == [0, 1, 2] and (s.seed == 0).all()
    with AuditStore(cfg.output, read_only=True) as st:
        records = st.records()
    deleted = {json.dumps(records[t]["deleted"]) for t in s.trial_id}
    assert len(deleted) == 3                                  # three different deletions


def test_draw_zero_keeps_the_trial_ids_of_configs_without_draws(tmp_path):
    one = plan(_config(tmp_path, perturbations=("random-delete",), seeds=(0,)))
    three = plan(_config(tmp_path, perturbations=("random-delete",), seeds=(0,), draws=3))
    assert one[0][1] == three[0][1] and one[0][2] == three[0][2]
    assert "draw" not in one[0][0].to_dict()
    assert three[1][0].to_dict()["draw"] == 1


@pytest.mark.parametrize("value", [0, -1, 1.5, True])
def test_draws_must_be_a_positive_integer(tmp_path, value):
    with pytest.raises(ConfigError, match="draws"):
        _config(tmp_path, draws=value)


def test_draws_from_toml(tmp_path):
    path = tmp_path / "a.toml"
    path.write_text('models = ["gru4rec"]\ndraws = 4\n')
    assert AuditConfig.from_toml(path).draws == 4


def test_a_store_written_before_draws_gains_the_column(tmp_path):
    cfg = _config(tmp_path, perturbations=("random-delete",), seeds=(0,))
    run_audit(cfg)
    con = duckdb.connect(cfg.output)
    con.execute("ALTER TABLE trials DROP COLUMN draw")      # the layout of earlier releases
    con.close()
    assert (trial_summary(cfg.output).draw == 0).all()      # read-only: read as draw 0
    run_audit(_config(tmp_path, perturbations=("random-delete",), seeds=(0,), draws=2))
    s = trial_summary(cfg.output)
    assert sorted(s.draw) == [0, 1]


def test_a_resumed_run_does_not_wait_for_a_cached_baseline(tmp_path):
    """Trials of one baseline wait for the group's first (which trains it); once the baseline
    is cached, a resumed run gives each trial a group of its own, so all workers start."""
    from recaudit.audit._engine import AuditStudy

    cfg = _config(tmp_path, perturbations=("random-delete", "latest-random-delete"),
                  seeds=(0,), draws=2)
    fresh = AuditStudy(cfg).plan()
    assert len({t.group for t in fresh}) == 1                  # one group: one baseline
    run_audit(_config(tmp_path, perturbations=("random-delete",), seeds=(0,)))
    resumed = AuditStudy(cfg).plan()                            # the baseline is cached now
    assert len({t.group for t in resumed}) == len(resumed) == 4
    assert [t.id for t in resumed] == [t.id for t in fresh]
    run_audit(cfg)                                              # and the run completes
    assert len(trial_summary(cfg.output)) == 4
