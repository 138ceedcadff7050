"""dry_run: fits planned and stored, a calibrated time estimate, the detectable difference."""

import re
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
    assert "what the audit would train" in text and "What the audit would compare" in text
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


def _two(tmp_path, perts=("random-delete", "seed-only"), seeds=(0, 1, 2)):
    cfg = _cfg(tmp_path, perts=perts, seeds=seeds)
    return replace(cfg, models=(*cfg.models, ModelSpec("sasrec", {"epochs": 2,
                                                                   "embedding_dim": 8})))


def test_plan_covers_every_comparison_the_run_decides(tmp_path):
    # two models with the seed-only floor: each model's perturbation against its floor, and
    # the models under each perturbation; a model comparison the store holds is read from its
    # own pairs (per seed and query), by hand here
    cfg = _two(tmp_path)
    run_audit(cfg)
    plan = dry_run(replace(cfg, seeds=(0, 1, 2, 3)), calibrate=False, detect=0.05)
    c = plan.comparisons
    a, b = (m.label for m in cfg.models)
    assert list(zip(c.kind, c.model, c.perturbation, c.a, c.b)) == [
        ("perturbations", a, "", "random-delete", "seed-only"),
        ("perturbations", b, "", "random-delete", "seed-only"),
        ("models", "", "random-delete", a, b), ("models", "", "seed-only", a, b)]
    assert set(c.basis) == {"store"} and not c.stand_in.any() and set(c.replicates) == {4}
    from recaudit.audit import AuditStore
    from recaudit.stats import estimate_mean

    with AuditStore(tmp_path / "a.duckdb", read_only=True) as store:
        qa = store.query_values(("rbo",), "synthetic", a)
        qb = store.query_values(("rbo",), "synthetic", b)
    x = qa[qa.perturbation == "random-delete"].sort_values(["seed", "query"])
    y = qb[qb.perturbation == "random-delete"].sort_values(["seed", "query"])
    est = estimate_mean(x.rbo.to_numpy() - y.rbo.to_numpy(), x.seed.to_numpy(),
                        x["query"].to_numpy())
    row = c.iloc[2]
    assert row.rbo_difference == pytest.approx(est.with_replicates(4).detectable())
    assert row.seeds_for == est.replicates_for(0.05)
    assert row.cap is None and np.isnan(row.at_cap)   # a plain run has no cap


def test_plan_of_a_run_until_decided_names_its_first_round_and_cap(tmp_path):
    from recaudit.stats import SequentialPlan

    cfg = _two(tmp_path, perts=("random-delete",), seeds=(0, 1))
    plan = dry_run(cfg, calibrate=False, until=SequentialPlan(cap=8), detect=0.05)
    # the first round is the first rung (3 seeds), not the configured 2; the cap's 8 seeds
    # train at most 8 baselines and 8 perturbed fits per model
    assert list(plan.fits.baselines) == [3, 3] and plan.first_round == 3
    assert list(plan.at_cap.remaining) == [16, 16]
    (row,) = plan.comparisons.itertuples()        # one model comparison, nothing else
    assert (row.kind, row.cap, row.replicates) == ("models", 8, 3)
    assert row.basis == "none" and row.expected_seeds != row.expected_seeds  # nothing to read
    from recaudit.errors import ConfigError

    with pytest.raises(ConfigError, match="nothing to decide"):
        dry_run(_cfg(tmp_path, perts=("random-delete",)), calibrate=False,
                until=SequentialPlan())


def test_plan_until_decided_reads_the_cap_from_a_store(tmp_path):
    from recaudit.stats import SequentialPlan

    cfg = _two(tmp_path, perts=("random-delete",))
    run_audit(cfg)
    plan = dry_run(cfg, calibrate=False, until=SequentialPlan(cap=12), detect=0.05)
    (row,) = plan.comparisons.itertuples()
    assert row.basis == "store" and row.at_cap < row.rbo_difference
    assert list(plan.at_cap.remaining) == [18, 18]  # seeds 3..11: a baseline and a fit each
    # the sequential design's figures, from the comparison's own pairs: what it decides 80 %
    # of the time with a cap of 12 and the seeds it spends there; at 0.05, how often and
    # after how many
    from recaudit.stats import design_summary

    (est,) = _model_estimate(tmp_path, cfg)
    s = design_summary(est, SequentialPlan(cap=12), comparisons=1, detect=0.05)
    assert (row.at_cap, row.spent_at_cap) == (s.decided, s.spent)
    assert (row.expected_seeds, row.power_at_cap) == (s.detect_spent, s.power)
    # about what the fixed test at the cap detects (a little more where the seeds' part
    # dominates: the design looks before), on fewer seeds
    fixed = est.with_replicates(12).detectable()
    assert 0.95 * fixed < row.at_cap < 1.25 * fixed and 3 <= row.spent_at_cap <= 12


def _model_estimate(tmp_path, cfg):
    from recaudit.audit import AuditStore
    from recaudit.stats import estimate_mean

    a, b = (m.label for m in cfg.models)
    with AuditStore(tmp_path / "a.duckdb", read_only=True) as store:
        qa = store.query_values(("rbo",), "synthetic", a).sort_values(["seed", "query"])
        qb = store.query_values(("rbo",), "synthetic", b).sort_values(["seed", "query"])
    return (estimate_mean(qa.rbo.to_numpy() - qb.rbo.to_numpy(), qa.seed.to_numpy(),
                          qa["query"].to_numpy()),)


def test_cli_dry_run_until_decided_names_the_cap_and_the_model_comparison(tmp_path, capsys):
    out = tmp_path / "q.duckdb"
    assert main(["audit", "--dataset", "synthetic", "--sample-users", "60", "--model",
                 "gru4rec", "--model", "sasrec", "--param", "epochs=1", "-p", "random-delete",
                 "--output", str(out), "--dry-run", "--until-decided"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "up to the cap of 32 seeds (--max-seeds)" in text
    assert "What the run would decide (1 comparison(s), one family)" in text
    # the comparison's name folds in its column: its words, in order
    assert re.search(r"gru4rec\(epochs=1\) vs .*sasrec\(epochs=1\) under .*random-delete",
                     text)
    assert not out.exists()


def test_like_gives_its_own_fit_times_for_the_same_model(tmp_path, recwarn):
    # a store of the same model on the same data: its trials' median own time is the time
    # per fit, and nothing is calibrated (no "calibrating" message, no "calibration" basis)
    earlier = _cfg(tmp_path, perts=("random-delete", "seed-only"), seeds=(0, 1, 2))
    run_audit(earlier)
    other = tmp_path / "new"
    other.mkdir()
    said = []
    plan = dry_run(_cfg(other, perts=("random-delete", "seed-only")),
                   like=tmp_path / "a.duckdb", progress=said.append)
    row = plan.fits.iloc[0]
    from recaudit.audit import trial_summary

    own = trial_summary(tmp_path / "a.duckdb").total_seconds
    assert row.time_basis == "like" and row.s_per_fit == pytest.approx(float(np.median(own)))
    assert said == [] and plan.detectable.iloc[0].basis == "like"
    assert not [w for w in recwarn if "--like" in str(w.message)]


def test_like_of_another_model_or_dataset_warns_and_lends_no_time(tmp_path):
    from recaudit.errors import RecauditWarning

    run_audit(_cfg(tmp_path, perts=("random-delete", "seed-only"), seeds=(0, 1, 2)))
    other = tmp_path / "new"
    other.mkdir()
    cfg = _cfg(other, perts=("random-delete", "seed-only"))
    longer = replace(cfg, models=(ModelSpec("gru4rec", {**cfg.models[0].params,
                                                        "epochs": 5}),))
    with pytest.warns(RecauditWarning, match=r"parameter epochs 3 \(not 5\)"):
        plan = dry_run(longer, calibrate=False, like=tmp_path / "a.duckdb")
    assert plan.fits.iloc[0].time_basis == "none"        # its times are not this model's
    assert plan.detectable.iloc[0].basis == "like"       # its variance stands in, said so
    bigger = replace(cfg, datasets=(DatasetSpec("synthetic", options={"n_users": 50,
                                                                      "n_items": 30}),))
    with pytest.warns(RecauditWarning, match=r"dataset options .*'n_users': 40.*not .*50"):
        assert dry_run(bigger, calibrate=False,
                       like=tmp_path / "a.duckdb").fits.iloc[0].time_basis == "none"
    sas = replace(cfg, models=(ModelSpec("sasrec", {"epochs": 3, "embedding_dim": 8}),))
    with pytest.warns(RecauditWarning, match=r"model gru4rec \(not sasrec\)"):
        dry_run(sas, calibrate=False, like=tmp_path / "a.duckdb")


def test_a_plan_with_nothing_left_to_train_says_so(tmp_path):
    # issue 60, item 9: "about – trials/h" for a store holding every trial of the plan
    from rich.console import Console

    from recaudit.cli._plan import _dry_run

    cfg = _cfg(tmp_path, perts=("random-delete",), seeds=(0,))
    run_audit(cfg)
    console = Console(record=True, width=80)
    _dry_run(cfg, console)
    text = console.export_text()
    assert "nothing to train: the store holds every trial of the plan." in text
    assert "trials/h" not in text
