"""dry_run: fits planned and stored, a calibrated time estimate, the detectable difference."""

from dataclasses import replace

import numpy as np
import pytest

from recaudit.audit import AuditConfig, DatasetSpec, ModelSpec, dry_run, run_audit
from recaudit.cli import main


def _cfg(tmp_path, perts=("random-delete", "seed-only", "none"), seeds=(0, 1)):
    return AuditConfig(datasets=(DatasetSpec("synthetic", options={"n_users": 40,
                                                                   "n_items": 30}),),
                       models=(ModelSpec("gru4rec", {"epochs": 3, "embedding_dim": 8,
                                                     "hidden_dim": 8}),),
                       perturbations=perts, seeds=seeds, output=str(tmp_path / "a.duckdb"))


def test_plan_counts_fits_and_calibrates_without_writing_the_store(tmp_path):
    cfg = _cfg(tmp_path)
    plan = dry_run(cfg)
    row = plan.fits.iloc[0]
    assert (row.baselines, row.perturbed, row.stored_trials, row.remaining) == (2, 4, 0, 6)
    assert row.epochs == 3 and row.s_per_epoch > 0 and row.rank_s >= 0
    assert row.time_basis == "calibration"
    assert row.s_per_fit == pytest.approx(3 * row.s_per_epoch + row.rank_s)
    assert row.hours == pytest.approx(6 * (3 * row.s_per_epoch + row.rank_s) / 3600)
    assert plan.hours == pytest.approx(row.hours)           # one worker
    d = plan.detectable.iloc[0]
    from recaudit.experiment import prepare

    n = len(prepare(cfg.datasets[0], cfg.split)[1].queries)
    assert d.basis == "calibration" and d.queries == n and d.replicates == 2
    assert "random-delete" in d.source       # the calibration pair repeats the first perturbation
    assert d.rbo_difference > 0 and 0 <= d.replicate_share <= 1
    assert d.seeds_for is None                # nothing asked
    assert not (tmp_path / "a.duckdb").exists()


def test_the_time_of_a_model_with_early_stopping_is_an_upper_bound(tmp_path):
    cfg = _cfg(tmp_path, perts=("random-delete",), seeds=(0,))
    cfg = replace(cfg, models=(ModelSpec("gru4rec", {**cfg.models[0].params, "patience": 2}),))
    row = dry_run(cfg).fits.iloc[0]
    assert row.time_basis == "calibration; at most: early stopping"
    assert row.s_per_fit == pytest.approx(3 * row.s_per_epoch + row.rank_s)


def test_plan_reads_both_levels_from_a_store_like_it(tmp_path):
    # an earlier audit with three seeds: its pairs of perturbations give both variance parts
    earlier = _cfg(tmp_path, perts=("random-delete", "earliest-random-delete", "seed-only"),
                   seeds=(0, 1, 2))
    run_audit(earlier)
    other = tmp_path / "new"
    other.mkdir()
    cfg = _cfg(other, perts=("random-delete", "earliest-random-delete", "seed-only"),
               seeds=(0, 1))
    plan = dry_run(cfg, calibrate=False, like=tmp_path / "a.duckdb", detect=0.05)
    d = plan.detectable.iloc[0]
    assert d.basis == "like" and d.source == "random-delete vs earliest-random-delete"
    # by hand: the pair's differences over the earlier store's seeds, projected to 2 seeds
    from recaudit.audit import AuditStore
    from recaudit.stats import estimate_mean

    with AuditStore(tmp_path / "a.duckdb", read_only=True) as store:
        q = store.query_values(("rbo",), d.dataset, d.model)
    a = q[q.perturbation == "random-delete"].sort_values(["seed", "query"])
    b = q[q.perturbation == "earliest-random-delete"].sort_values(["seed", "query"])
    est = estimate_mean(a.rbo.to_numpy() - b.rbo.to_numpy(), a.seed.to_numpy(),
                        a["query"].to_numpy())
    assert d.rbo_difference == pytest.approx(est.with_replicates(2).detectable())
    need = est.replicates_for(0.05)
    assert d.seeds_for == need
    # more planned seeds detect a smaller difference
    more = dry_run(replace(cfg, seeds=(0, 1, 2, 3, 4, 5)), calibrate=False,
                   like=tmp_path / "a.duckdb").detectable.iloc[0]
    assert more.rbo_difference < d.rbo_difference and more.replicates == 6


def test_like_names_a_missing_store(tmp_path):
    from recaudit.errors import ConfigError

    with pytest.raises(ConfigError, match="no such store"):
        dry_run(_cfg(tmp_path), calibrate=False, like=tmp_path / "nope.duckdb")


def test_plan_reads_what_the_store_holds(tmp_path):
    run_audit(_cfg(tmp_path, seeds=(0,)))
    plan = dry_run(_cfg(tmp_path), calibrate=False)
    row = plan.fits.iloc[0]
    assert (row.stored_trials, row.stored_baselines) == (3, 1)
    assert row.remaining == 1 + 2                           # seed 1: a baseline, two fits
    # time from the finished trials' own times (no calibration fit): their median per fit
    from recaudit.audit import trial_summary

    own = trial_summary(tmp_path / "a.duckdb").total_seconds
    assert row.time_basis == "store" and np.isnan(row.s_per_epoch)
    assert row.s_per_fit == pytest.approx(float(np.median(own)))
    assert row.hours == pytest.approx(3 * float(np.median(own)) / 3600)
    assert plan.detectable.iloc[0].basis == "none"   # one seed: no replicates' variance


def test_plan_counts_a_cached_baseline_of_a_new_model_version_as_stored(tmp_path):
    """A baseline cached under its model's implementation version (gru4rec's is past the
    first: its cache key carries the version) is not counted again as one to train."""
    run_audit(_cfg(tmp_path, perts=("random-delete", "none"), seeds=(0,)))
    row = dry_run(_cfg(tmp_path, seeds=(0,)), calibrate=False).fits.iloc[0]
    assert (row.stored_trials, row.stored_baselines) == (2, 1)
    assert (row.remaining, row.remaining_baselines) == (1, 0)   # seed-only's fit alone


def test_plan_without_stored_trials_or_calibration_has_no_time(tmp_path):
    row = dry_run(_cfg(tmp_path), calibrate=False).fits.iloc[0]
    assert row.time_basis == "none" and np.isnan(row.hours) and row.remaining == 6


def test_cli_dry_run_trains_nothing(tmp_path, capsys):
    out = tmp_path / "q.duckdb"
    assert main(["audit", "--dataset", "synthetic", "--sample-users", "100", "--model",
                 "gru4rec", "--seeds", "1", "--param", "epochs=2", "--output", str(out),
                 "--dry-run"]) == 0
    text = capsys.readouterr().out
    assert "what the audit would train" in text and "detectable ΔRBO" in text
    assert not out.exists()


def test_a_label_names_the_model_without_changing_trial_ids(tmp_path):
    from recaudit.audit import AuditStore, load_config, plan

    base = ('seeds = [0]\nperturbations = ["seed-only"]\n'
            '[[datasets]]\nname = "synthetic"\n[datasets.options]\nn_users = 30\n'
            'n_items = 20\n[[models]]\nname = "gru4rec"\n')
    plain, labelled = tmp_path / "a.toml", tmp_path / "b.toml"
    plain.write_text(base + "params = {epochs = 1}\n")
    labelled.write_text(base + 'label = "GRU (1 epoch)"\nparams = {epochs = 1}\n')
    a, b = load_config(plain), load_config(labelled)
    assert [tid for _, tid, _ in plan(a)] == [tid for _, tid, _ in plan(b)]
    assert b.models[0].label == "GRU (1 epoch)" and a.models[0].label == "gru4rec(epochs=1)"
    run_audit(AuditConfig.from_dict({**b.to_dict(), "output": str(tmp_path / "b.duckdb")}))
    with AuditStore(tmp_path / "b.duckdb", read_only=True) as store:
        assert set(store.trials().model_label) == {"GRU (1 epoch)"}


def test_a_command_model_has_a_short_default_label():
    from recaudit.experiment import ModelSpec

    m = ModelSpec("command", {"train": "python -u /home/me/fit.py {train} {seed} {model_dir}",
                              "rank": "python rank.py {model_dir} {queries} {k} {output}"})
    assert m.label == "command(fit.py)"


def test_a_stacked_plan_times_a_stack_and_divides_the_perturbed_fits_by_its_speedup(
        tmp_path, monkeypatch):
    from recaudit.audit import _dryrun
    from recaudit.audit import ExecutorSpec

    seen = []
    real = _dryrun._stack_speedup

    def spy(trial, members, s_per_epoch):
        seen.append(members)
        return real(trial, members, s_per_epoch)

    monkeypatch.setattr(_dryrun, "_stack_speedup", spy)
    cfg = replace(_cfg(tmp_path, perts=("random-delete", "seed-only", "earliest-random-delete")),
                  executor=ExecutorSpec(stack=8))
    plan = dry_run(cfg)
    row = plan.fits.iloc[0]
    assert seen == [3]                  # three perturbed fits per baseline: a stack of three
    assert plan.stack == 8 and np.isfinite(row.stack_speedup) and row.stack_speedup > 0
    expected = ((2 + 6 / row.stack_speedup) * 3 * row.s_per_epoch + 8 * row.rank_s) / 3600
    assert row.hours == pytest.approx(expected)
    assert plan.trials_per_hour == pytest.approx(6 / plan.hours)   # perturbed fits
    assert _dryrun._stack_speedup(cfg.trials()[0], 1, 1.0) == 1.0


def test_cli_dry_run_with_a_stack_says_trials_per_hour(tmp_path, capsys):
    main(["audit", "--dataset", "synthetic", "--sample-users", "100", "--model", "gru4rec",
          "--param", "epochs=2",
          "--param", "embedding_dim=8", "--param", "hidden_dim=8", "-p", "random-delete",
          "-p", "seed-only", "--stack", "2", "-o", str(tmp_path / "a.duckdb"), "--dry-run"])
    out = capsys.readouterr().out
    assert "stack ×" in out and "stacks of up to 2" in out and "trials/h" in out
    assert not (tmp_path / "a.duckdb").exists()
