"""The pieces of cluster runs that need no cluster: executor keys, the array cache (local and
through fsspec), installing data received from the driver, and refusing foreign results."""

import numpy as np
import pandas as pd
import pytest

from recaudit.audit import (AuditConfig, DatasetSpec, ExecutorSpec, MetricSpec, ModelSpec,
                            load_config, run_audit, trial_summary)
from recaudit.errors import ConfigError, DataError, RecauditError
from recaudit.experiment import load_dataset
from recaudit.experiment._cache import ArrayCache
from recaudit.experiment._data import _INSTALLED, install_dataset
from recaudit.experiment._ray import task_options


@pytest.mark.parametrize("kw,key,needle", [
    (dict(kind="process", gpus_per_trial=0.5), "gpus_per_trial", "kind = 'ray'"),
    (dict(kind="ray", gpus_per_trial=-1), "gpus_per_trial", ">= 0"),
    (dict(kind="ray", gpus_per_trial=1.5), "gpus_per_trial", "fraction <= 1"),
    (dict(kind="ray", retries=-1), "retries", ">= 0"),
    (dict(kind="ray", cache_uri="baselines"), "cache_uri", "absolute"),
    (dict(kind="ray", cache_uri="nosuchfs://bucket/x"), "cache_uri", "unknown storage"),
    (dict(cache_uri=" "), "cache_uri", "not empty"),
    (dict(kind="ray", devices=["cuda:0"]), "devices", "gpus_per_trial"),
    (dict(kind="ray", keep_fits=True), "keep_fits", "kind = 'process'"),
])
def test_bad_cluster_keys_are_config_errors_naming_the_key(kw, key, needle):
    if "://" in str(kw.get("cache_uri")):
        pytest.importorskip("fsspec")
    with pytest.raises(ConfigError) as err:
        ExecutorSpec(**kw)
    assert err.value.key == key and needle in str(err.value)


def test_a_url_without_fsspec_is_a_config_error_that_says_so(monkeypatch):
    import sys

    for name in [m for m in sys.modules if m == "fsspec" or m.startswith("fsspec.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "fsspec", None)  # import fsspec raises ImportError
    with pytest.raises(ConfigError, match="needs fsspec") as err:
        ExecutorSpec("ray", cache_uri="s3://bucket/audit")
    assert err.value.key == "cache_uri"
    assert ExecutorSpec("ray", cache_uri="/mnt/shared/baselines").cache_uri  # local: no fsspec


def test_cluster_keys_from_toml_become_ray_task_options(tmp_path):
    path = tmp_path / "a.toml"
    path.write_text('models = ["gru4rec"]\n[executor]\nkind = "ray"\naddress = "auto"\n'
                    'gpus_per_trial = 1\nthreads_per_worker = 2\nretries = 5\n'
                    'cache_uri = "s3://bucket/audit"\n')
    ex = load_config(path).executor
    assert ex.gpus_per_trial == 1.0 and ex.cache_uri == "s3://bucket/audit"
    assert task_options(ex) == {"num_cpus": 2, "num_gpus": 1.0, "max_retries": 5,
                                "retry_exceptions": False}
    assert "num_gpus" not in task_options(ExecutorSpec("ray", gpus_per_trial=0.0))
    assert ExecutorSpec("ray", gpus_per_trial=0.125).gpus_per_trial == 0.125


@pytest.mark.parametrize("where", ["local", "file", "memory"])
def test_array_cache_round_trips_and_leaves_no_partial_entry(tmp_path, where):
    if where == "memory":
        pytest.importorskip("fsspec")
    uri = {"local": str(tmp_path / "c"), "file": f"file://{tmp_path}/c",
           "memory": f"memory://recaudit-test-{tmp_path.name}"}[where]
    cache = ArrayCache(uri)
    assert cache.get("k") is None and not cache.has("k")
    items = np.arange(12, dtype=np.int32).reshape(3, 4)
    cache.put("k", items=items)
    assert ArrayCache(uri).has("k") and not ArrayCache(uri).has("other")
    got = ArrayCache(uri).get("k")
    assert got is not None and got["items"].dtype == np.int32
    np.testing.assert_array_equal(got["items"], items)
    if where != "memory":
        assert [p.name for p in (tmp_path / "c").iterdir()] == ["k.npz"]
    else:
        import fsspec

        fs = fsspec.filesystem("memory")
        assert [p.rsplit("/", 1)[-1] for p in fs.ls(uri.split("://")[1], detail=False)] \
            == ["k.npz"]


def test_installed_data_is_checked_and_then_loaded_instead_of_read():
    spec = DatasetSpec("synthetic", options={"n_users": 30, "seed": 9})
    other = DatasetSpec("synthetic", options={"n_users": 30, "seed": 10})
    data = load_dataset(spec)
    try:
        with pytest.raises(DataError, match="fingerprint"):
            install_dataset(other, data, load_dataset(other).fingerprint())
        install_dataset(other, data, data.fingerprint())  # what the driver sent for `other`
        assert load_dataset(other) is data
    finally:
        _INSTALLED.clear()
    assert load_dataset(other) is not data


TINY_DATA = DatasetSpec("synthetic", options={"n_users": 40, "n_items": 30, "n_clusters": 4,
                                              "mean_length": 14, "seed": 5})
TINY_MODEL = ModelSpec("gru4rec", {"epochs": 2, "embedding_dim": 8, "hidden_dim": 8,
                                   "batch_size": 64})


def _config(output, **executor):
    return AuditConfig(models=(TINY_MODEL,), perturbations=("none", "random-delete"),
                       seeds=(0, 1), datasets=(TINY_DATA,), metrics=MetricSpec(k=5),
                       output=str(output), executor=ExecutorSpec(**executor))


def _numbers(path):
    s = trial_summary(path)
    return s.drop(columns=["fit_seconds", "total_seconds"]).reset_index(drop=True)


def test_baselines_through_an_fsspec_cache_uri_are_trained_once(tmp_path, monkeypatch):
    pytest.importorskip("fsspec")
    import recaudit.audit._baselines as baselines

    trained = []
    real = baselines.train_baseline
    monkeypatch.setattr(baselines, "train_baseline",
                        lambda trial, split, *rest: trained.append(trial.seed)
                        or real(trial, split, *rest))
    run_audit(_config(tmp_path / "a.duckdb"))  # default: <store>.baselines
    assert sorted(trained) == [0, 1] and (tmp_path / "a.duckdb.baselines").is_dir()
    uri = f"memory://recaudit-audit-{tmp_path.name}"
    for store, expect in (("b", [0, 1]), ("c", [])):  # c: a new store reuses the cache
        trained.clear()
        run_audit(_config(tmp_path / f"{store}.duckdb", cache_uri=uri))
        assert sorted(trained) == expect
        assert not (tmp_path / f"{store}.duckdb.baselines").exists()
        pd.testing.assert_frame_equal(_numbers(tmp_path / f"{store}.duckdb"),
                                      _numbers(tmp_path / "a.duckdb"), check_exact=True)


def test_a_result_the_audit_did_not_plan_is_refused_before_writing(tmp_path, monkeypatch):
    import recaudit.audit._study as engine

    real = engine.run_trial

    def foreign(*args, **kw):
        out = real(*args, **kw)
        out.row["trial_id"] = "0" * 20  # as if the worker had other data
        return out

    monkeypatch.setattr(engine, "run_trial", foreign)
    cfg = _config(tmp_path / "a.duckdb")
    with pytest.raises(RecauditError, match="did not plan"):
        run_audit(cfg)
    assert trial_summary(cfg.output).empty


def test_a_local_ray_cluster_from_a_python_path_with_a_space_is_refused(monkeypatch):
    """Ray's node manager starts workers through a shell without quoting the Python's path:
    from ``/tmp/a b/...`` none starts and the run waits for ever. Said before Ray starts."""
    from recaudit.experiment._ray import _connect

    class NoRay:  # ray itself is never reached
        def is_initialized(self):
            return False

        def init(self, **kwargs):
            raise AssertionError("Ray was started")

    monkeypatch.setattr("sys.executable", "/tmp/a b/.venv/bin/python")
    with pytest.raises(ConfigError) as err:
        _connect(NoRay(), ExecutorSpec("ray", workers=2))
    assert err.value.key == "executor.kind"
    assert "contains a space (/tmp/a b/.venv/bin/python)" in str(err.value)
    assert "another executor" in str(err.value)
    # a cluster elsewhere starts its workers with its own Python: not refused
    with pytest.raises(AssertionError, match="Ray was started"):
        _connect(NoRay(), ExecutorSpec("ray", workers=2, address="ray://cluster:10001"))
