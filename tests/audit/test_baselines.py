"""Baselines: made before their group in a process pool, and their seconds counted once."""

import numpy as np

from recaudit.audit import (AuditConfig, AuditStore, DatasetSpec, ExecutorSpec, MetricSpec,
                            ModelSpec, run_audit, trial_summary)
from recaudit.audit._context import cache_key
from recaudit.audit._study import AuditStudy, plan
from recaudit.audit._runner import prime_baseline, run_trial
from recaudit.experiment import ArrayCache

TINY_DATA = DatasetSpec("synthetic", options={"n_users": 40, "n_items": 30, "n_clusters": 4,
                                              "mean_length": 14, "seed": 5})
TINY_MODEL = ModelSpec("gru4rec", {"epochs": 2, "embedding_dim": 8, "hidden_dim": 8,
                                   "batch_size": 64})
PERTURBATIONS = ("random-delete", "earliest-random-delete", "latest-random-delete")


def _config(tmp_path, name="a.duckdb", **kw):
    base = dict(models=(TINY_MODEL,), seeds=(0,), datasets=(TINY_DATA,),
                perturbations=PERTURBATIONS, metrics=MetricSpec(k=5),
                output=str(tmp_path / name))
    base.update(kw)
    return AuditConfig(**base)


def _cache(cfg):
    return ArrayCache(cfg.output + ".baselines")


def test_the_cached_baseline_keeps_its_seconds_and_a_trial_counts_them_only_when_charged(
        tmp_path):
    cfg = _config(tmp_path, perturbations=("random-delete",))
    run_audit(cfg)
    trial, _, baseline = plan(cfg)[0]
    key = cache_key(trial, baseline)    # the baseline key and its model's arithmetic version
    entry = _cache(cfg).get(key)
    assert entry is not None and float(entry["fit_seconds"]) > 0
    assert float(entry["rank_seconds"]) > 0
    # a sentinel larger than any real fit shows which trials count the cached seconds
    _cache(cfg).put(key, items=entry["items"], fit_seconds=np.float64(1e6),
                    rank_seconds=np.float64(1e5))
    charged = run_trial(trial, cache_dir=cfg.output + ".baselines", charge_baseline=True).row
    free = run_trial(trial, cache_dir=cfg.output + ".baselines", charge_baseline=False).row
    assert charged["fit_seconds"] >= 1e6 and charged["rank_seconds"] >= 1e5
    assert charged["total_seconds"] >= 1.1e6   # the trial that counts it carries it whole
    assert free["fit_seconds"] < 1e6 and free["rank_seconds"] < 1e5
    assert free["total_seconds"] < 1e5
    # an entry cached before the seconds were kept counts none
    _cache(cfg).put(key, items=entry["items"])
    old = run_trial(trial, cache_dir=cfg.output + ".baselines", charge_baseline=True).row
    assert old["fit_seconds"] < 1e6


def test_each_baseline_is_charged_to_one_pending_trial_and_never_again(tmp_path):
    cfg = _config(tmp_path, seeds=(0, 1))
    jobs = [t.job for t in AuditStudy(cfg).plan()]
    charged = {}
    for job in jobs:
        charged.setdefault(job.baseline_key, []).append(job.charge)
    assert len(charged) == 2 and all(flags.count(True) == 1 for flags in charged.values())
    # once a trial of a baseline is stored, no later trial of it counts the baseline again,
    # whichever config plans it (another experiment on the same store)
    run_audit(_config(tmp_path, seeds=(0,), perturbations=("random-delete",)))
    later = [t.job for t in AuditStudy(cfg).plan()]
    stored = {job.baseline_key for job in later if job.trial.seed == 0}
    assert [job.charge for job in later if job.baseline_key in stored] == [False] * 3
    assert [job.charge for job in later if job.baseline_key not in stored] == [True, False, False]


def test_a_process_pool_primes_the_baseline_and_gives_the_in_process_numbers(tmp_path):
    one = _config(tmp_path, "one.duckdb")
    pool = _config(tmp_path, "pool.duckdb", executor=ExecutorSpec("process", workers=2))
    run_audit(one)
    run_audit(pool)
    a = trial_summary(one.output).sort_values("trial_id").reset_index(drop=True)
    b = trial_summary(pool.output).sort_values("trial_id").reset_index(drop=True)
    assert list(a.trial_id) == list(b.trial_id)
    assert np.array_equal(a.rbo.to_numpy(), b.rbo.to_numpy())
    keys = {(k, cache_key(t, k)) for t, _, k in plan(pool)}
    assert len(keys) == 1
    key, cached = keys.pop()
    assert _cache(pool).has(cached)
    with AuditStore(pool.output, read_only=True) as store:
        assert store.counted_baselines() == {key}


def test_priming_an_existing_baseline_leaves_it_as_it_is(tmp_path):
    cfg = _config(tmp_path, perturbations=("random-delete",))
    trial, _, baseline = plan(cfg)[0]
    key = cache_key(trial, baseline)
    cache = cfg.output + ".baselines"
    prime_baseline(trial, cache)
    entry = ArrayCache(cache).get(key)
    assert entry is not None and float(entry["fit_seconds"]) > 0
    ArrayCache(cache).put(key, items=entry["items"], fit_seconds=np.float64(7.0),
                          rank_seconds=np.float64(8.0))
    prime_baseline(trial, cache)                  # there already: not trained, not rewritten
    again = ArrayCache(cache).get(key)
    assert float(again["fit_seconds"]) == 7.0 and float(again["rank_seconds"]) == 8.0


def test_one_rule_counts_a_baselines_seconds():
    """Trained here: counted, nothing carried; made elsewhere: counted only when charged,
    and then carried into the trial's total too."""
    from recaudit.audit._runner import Baseline

    items = np.zeros((1, 1), dtype=np.int32)
    here = Baseline(items, 3.0, 1.0, trained_here=True)
    elsewhere = Baseline(items, 3.0, 1.0)
    assert here.counted(charge=False) == here.counted(charge=True) == (3.0, 1.0, 0.0)
    assert elsewhere.counted(charge=True) == (3.0, 1.0, 4.0)
    assert elsewhere.counted(charge=False) == (0.0, 0.0, 0.0)
