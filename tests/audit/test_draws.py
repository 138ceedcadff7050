"""Repeated perturbation draws against one trained baseline (``draws``; Oh et al. 2022 Table 4)."""

import json
import re

import duckdb
import pytest

from recaudit.audit import (AuditConfig, DatasetSpec, MetricSpec, ModelSpec, AuditStore, run_audit,
                            trial_summary)
from recaudit.audit._study import plan
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
    import recaudit.audit._baselines as baselines

    cfg = _config(tmp_path, perturbations=("random-delete",), seeds=(0,), draws=3)
    planned = plan(cfg)
    assert [t.draw for t, _, _ in planned] == [0, 1, 2]
    assert len({tid for _, tid, _ in planned}) == 3
    assert len({key for _, _, key in planned}) == 1          # one baseline for the three
    trained = []
    real = baselines.train_baseline
    monkeypatch.setattr(baselines, "train_baseline",
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
    from recaudit.audit._study import AuditStudy

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


def test_a_perturbation_that_draws_nothing_is_planned_once_per_baseline(tmp_path):
    """CASPER, position removal and the floors give the same edit on every draw: draw 0 only,
    with the id it has without draws; the random one gets its three draws."""
    perts = ("random-delete", "casper-delete", "remove-end-2", "seed-only")
    cfg = _config(tmp_path, perturbations=perts, seeds=(0, 1), draws=3)
    planned = plan(cfg)
    by_pert = {}
    for t, _, _ in planned:
        by_pert.setdefault(t.perturbation, []).append((t.seed, t.draw))
    assert by_pert == {"random-delete": [(s, d) for s in (0, 1) for d in range(3)],
                       "casper-delete": [(0, 0), (1, 0)], "remove-end-2": [(0, 0), (1, 0)],
                       "seed-only": [(0, 0), (1, 0)]}
    assert [cfg.draws_of(p) for p in perts] == [3, 1, 1, 1]
    single = plan(_config(tmp_path, perturbations=perts, seeds=(0, 1)))
    ids = {(t.perturbation, t.seed, t.draw): tid for t, tid, _ in planned}
    assert all(ids[(t.perturbation, t.seed, 0)] == tid for t, tid, _ in single)
    assert len({key for _, _, key in planned}) == 2               # one baseline per seed


def test_the_dry_run_counts_one_fit_for_a_fixed_perturbation(tmp_path, capsys):
    from recaudit.audit import dry_run
    from recaudit.cli import main

    cfg = _config(tmp_path, perturbations=("random-delete", "casper-delete"), seeds=(0, 1),
                  draws=4)
    row = dry_run(cfg, calibrate=False).fits.iloc[0]
    assert (row.baselines, row.perturbed, row.remaining) == (2, 2 * 4 + 2, 2 + 10)
    path = tmp_path / "a.toml"
    path.write_text('seeds = 2\ndraws = 4\nperturbations = ["random-delete", '
                    '"casper-delete"]\noutput = "' + str(tmp_path / "b.duckdb") + '"\n'
                    '[[datasets]]\nname = "synthetic"\n[datasets.options]\nn_users = 30\n'
                    'n_items = 20\n[[models]]\nname = "gru4rec"\nparams = {epochs = 1}\n')
    assert main(["run", str(path), "--dry-run"]) == 0
    # at 80 columns the plan is one line per figure: "column   value"
    lines = capsys.readouterr().out.splitlines()
    value = {col: next(re.split(r"\s{2,}", line.strip())[-1] for line in lines
                       if re.search(rf"\s{col}\s{{2,}}", line))
             for col in ("baselines", "perturbed", "stored", "to train")}
    assert value == {"baselines": "2", "perturbed": "10", "stored": "0 + 0", "to train": "12"}
    assert not (tmp_path / "b.duckdb").exists()


def test_the_statistics_read_a_fixed_perturbation_as_one_draw(tmp_path, monkeypatch):
    """A store written when every perturbation was drawn ``draws`` times holds identical
    repeats of a deterministic one: the decisions read draw 0 only, so one measurement does
    not count as three replicates."""
    from recaudit.audit import compare_perturbations, summary
    from recaudit.audit._spec import AuditConfig as Config

    monkeypatch.setattr(Config, "draws_of", lambda self, p: self.draws)   # the old planning
    cfg = _config(tmp_path, perturbations=("random-delete", "casper-delete"), seeds=(0,),
                  draws=3)
    run_audit(cfg)
    stored = trial_summary(cfg.output)
    assert sorted(stored[stored.perturbation == "casper-delete"].draw) == [0, 1, 2]
    casper = stored[stored.perturbation == "casper-delete"]
    assert casper.rbo.nunique() == 1                          # three identical repeats
    monkeypatch.undo()
    s = summary(cfg.output).set_index("perturbation")
    assert s.loc["casper-delete", "draws"] == 1 and s.loc["random-delete", "draws"] == 3
    assert s.loc["casper-delete", "levels"] == "queries only"
    c = compare_perturbations(cfg.output, "casper-delete", "random-delete").iloc[0]
    with AuditStore(cfg.output, read_only=True) as st:
        q = st.query_values(("rbo",), "synthetic", stored.model_label.iloc[0])
    n_queries = q["query"].nunique()
    assert c.pairs == n_queries                               # (seed, query) pairs, once each
    assert "draws" not in plan(cfg)[1][0].to_dict()           # and planned once again now
