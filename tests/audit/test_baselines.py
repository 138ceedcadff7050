"""Baselines: made before their group in a process pool, and their seconds counted once."""

import numpy as np

from recaudit.audit import (AuditConfig, AuditStore, DatasetSpec, ExecutorSpec, MetricSpec,
                            ModelSpec, run_audit, trial_summary)
from recaudit.audit._context import cache_key
from recaudit.audit._study import AuditStudy, plan
from recaudit.audit._baselines import prime_baseline
from recaudit.audit._runner import run_trial
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
    """Trained here: counted, nothing carried but what its fit took before this process;
    made elsewhere: counted only when charged, and then carried into the trial's total too."""
    from recaudit.audit._baselines import Baseline

    items = np.zeros((1, 1), dtype=np.int32)
    here = Baseline(items, 3.0, 1.0, trained_here=True)
    elsewhere = Baseline(items, 3.0, 1.0)
    assert here.counted(charge=False) == here.counted(charge=True) == (3.0, 1.0, 0.0)
    assert elsewhere.counted(charge=True) == (3.0, 1.0, 4.0)
    assert elsewhere.counted(charge=False) == (0.0, 0.0, 0.0)
    # trained here from a fit resumed after 2 s elsewhere: those 2 s are carried
    resumed = Baseline(items, 3.0, 1.0, trained_here=True, before=2.0)
    assert resumed.counted(charge=False) == (3.0, 1.0, 2.0)


LOGGED = '''
import os
import time

import numpy as np

from recaudit.data import RankLists
from recaudit.models import as_queries


class Logged:
    """Popularity; each fit writes its process, training rows and interval to a log."""

    def __init__(self, **params):
        self.params = params

    def fit(self, train, *, seed):
        start = time.time()
        time.sleep(float(os.environ["RECAUDIT_TEST_FIT_S"]))
        self.counts_ = np.bincount(train.item, minlength=train.n_items).astype(float)
        with open(os.environ["RECAUDIT_TEST_FITS"], "a") as log:
            log.write(f"{os.getpid()} {len(train)} {start} {time.time()}\\n")
        return self

    def rank(self, queries, k=None):
        items = np.tile(np.argsort(-self.counts_, kind="stable"), (len(as_queries(queries)), 1))
        return RankLists(items[:, :k] if k else items)
'''


def test_a_trial_that_does_not_read_its_baseline_trains_beside_its_priming(tmp_path,
                                                                           monkeypatch):
    """Two workers, one random deletion: the baseline (primed, in one worker) and the
    trial's perturbed fit (in the other) run at once; the trial takes the baseline after its
    own fit; the numbers are the in-process run's, the baseline counted once."""
    (tmp_path / "logged.py").write_text(LOGGED)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    fits = tmp_path / "fits.txt"
    monkeypatch.setenv("RECAUDIT_TEST_FITS", str(fits))
    model = ModelSpec("logged:Logged")
    one = _config(tmp_path, "one.duckdb", models=(model,), perturbations=("random-delete",))
    pool = _config(tmp_path, "pool.duckdb", models=(model,), perturbations=("random-delete",),
                   executor=ExecutorSpec("process", workers=2))
    (job,) = [t.job for t in AuditStudy(pool).plan()]
    assert job.baseline_last and not AuditStudy(one).plan()[0].job.baseline_last
    monkeypatch.setenv("RECAUDIT_TEST_FIT_S", "0.2")
    run_audit(one)
    fits.unlink()
    # fits of 5 s: longer than the difference a loaded machine makes between the workers'
    # starts, so that two fits that run at once are seen to overlap
    monkeypatch.setenv("RECAUDIT_TEST_FIT_S", "5")
    run_audit(pool)
    a, b = trial_summary(one.output), trial_summary(pool.output)
    for column in ("trial_id", "rbo", "jaccard", "mrr_base", "mrr_pert"):
        assert a[column].tolist() == b[column].tolist(), column
    logged = [line.split() for line in fits.read_text().splitlines()]
    (base,) = [f for f in logged if int(f[1]) == max(int(g[1]) for g in logged)]
    (pert,) = [f for f in logged if f is not base]
    assert base[0] != pert[0]                             # two workers, one fit each
    assert float(pert[2]) < float(base[3]) and float(base[2]) < float(pert[3])  # at once
    (trial, _, key), = plan(pool)
    assert not list((tmp_path / "pool.duckdb.baselines").glob("*.lock"))
    with AuditStore(pool.output, read_only=True) as store:
        row = store.sql("SELECT fit_seconds, rank_seconds, total_seconds FROM trials").iloc[0]
        assert store.counted_baselines() == {key}
    # its time: its own work plus the baseline's seconds (charged), not the wait between
    assert row.total_seconds >= row.fit_seconds + row.rank_seconds >= 10.0


def test_a_trial_taking_its_baseline_last_trains_it_when_nobody_does(tmp_path):
    """Without a priming (its worker died, or none was run), a trial that takes its baseline
    last trains it itself, caches it and counts it: the usual order's numbers."""
    cfg = _config(tmp_path, perturbations=("random-delete",))
    trial, _, key = plan(cfg)[0]
    usual = run_trial(trial, cache_dir=str(tmp_path / "usual"))
    last = run_trial(trial, cache_dir=str(tmp_path / "last"), baseline_last=True)
    assert last.queries.equals(usual.queries)
    assert ArrayCache(str(tmp_path / "last")).has(cache_key(trial, key))
    assert last.row["fit_seconds"] > 0 and not list((tmp_path / "last").glob("*.lock"))


def test_only_trials_that_never_read_their_baseline_take_it_last(tmp_path):
    from recaudit.audit._runner import baseline_last
    from recaudit.perturb import parse

    cfg = _config(tmp_path, perturbations=("random-delete",))
    trial = plan(cfg)[0][0]
    cache = str(tmp_path / "cache")
    assert baseline_last(trial, parse("random-delete"), cache)
    assert baseline_last(trial, parse("seed-only"), cache)
    assert not baseline_last(trial, parse("tracin-delete"), cache)   # refits the baseline
    assert not baseline_last(trial, parse("random-delete"), None)     # no cache to wait on
    assert not baseline_last(trial, parse("random-delete"), "s3://bucket/cache")
