"""A process pool's worker starts with what the pool needs, not the whole package: its trials
import what they use (a rating model's trial never imports torch, a sequential one never the
rating models' numba kernels; issue 50)."""

from recaudit.experiment import ExecutorSpec, execute

from ._worker_modules import modules

#: What no worker imports before its trial asks for it.
LATER = ("torch", "numba", "scipy", "pandas", "duckdb", "recaudit.data", "recaudit.models",
         "recaudit.perturb", "recaudit.metrics", "recaudit.audit", "recaudit.studies",
         "recaudit.experiment._data", "recaudit.experiment._store")


def test_a_pool_worker_imports_nothing_its_trials_do_not_ask_for():
    spec = ExecutorSpec("process", workers=2, threads_per_worker=1)
    seen = list(execute(modules, [(0,), (1,)], spec))
    assert len(seen) == 2
    for held in seen:
        assert "recaudit.experiment._executors" in held  # the worker did start as ours
        assert not set(LATER) & set(held), sorted(set(LATER) & set(held))
