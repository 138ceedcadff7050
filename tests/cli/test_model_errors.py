"""A user's own model that fails (``fit`` raising, ``rank`` returning the wrong thing, a missing
``k``), run as ``recaudit`` runs them (in this process, but for ``--debug``'s traceback,
printed by ``python -m recaudit``) with and without workers: one line naming the trial, the
exception and its message, what is saved; ``--debug`` for the traceback."""

import subprocess

import pytest

from recaudit.audit import AuditStore

from ._entry import recaudit_here
from .conftest import USER_MODELS, recaudit_cmd, recaudit_env

#: A model that fails for seed 1 only: seed 0's trials finish first (in-process) and are kept.
FAILS_ON_SEED_1 = '''

class FailsOnSeed1(Pop):
    def fit(self, train, *, seed):
        if seed == 1:
            raise ValueError("learning rate must be positive")
        return super().fit(train, seed=seed)
'''


@pytest.fixture
def models(tmp_path):
    (tmp_path / "usermodels.py").write_text(USER_MODELS + FAILS_ON_SEED_1)
    return tmp_path


def _audit(folder, model, *extra, workers=1, seeds=1):
    store = folder / f"{model}-{workers}.duckdb"
    args = ["audit", "--model", f"usermodels:{model}", "-p", "random-delete", "-p",
            "seed-only", "--seeds", str(seeds), "--workers", str(workers), "--output",
            str(store), *extra]
    return recaudit_here(*args, cwd=folder, env={"COLUMNS": "200"}), store


def _stored(store):
    if not store.exists():
        return 0
    with AuditStore(store, read_only=True) as s:
        return len(s.trials())


@pytest.mark.slow
@pytest.mark.parametrize("workers", [1, 2])
@pytest.mark.parametrize("model, says", [
    ("FitRaises", "ValueError: learning rate must be positive"),
    ("RankArray", "RankArray.rank must return RankLists (got ndarray)"),
    ("RankShort", "RankShort.rank returned 1 rank list for"),
])
def test_a_failing_model_is_one_line_naming_the_trial(models, model, says, workers):
    proc, store = _audit(models, model, workers=workers)
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    (line,) = proc.stderr.strip().splitlines()
    assert line.startswith(f"error: trial usermodels:{model} · "), line
    assert " · seed 0 failed: " in line and says in line, line
    assert f"0 finished trials saved in {store}; fix it and run the same command again to " \
           "resume" in line, line
    # a traceback helps with an exception from the model's own code, not with a broken
    # contract, which the message states in full
    assert line.endswith("(run with --debug for the traceback)") == (model == "FitRaises")


@pytest.mark.slow
def test_the_finished_trials_are_kept_and_counted(models):
    proc, store = _audit(models, "FailsOnSeed1", seeds=2)
    assert proc.returncode == 2, proc.stderr
    (line,) = proc.stderr.strip().splitlines()
    assert "usermodels:FailsOnSeed1 · random-delete · seed 1 failed" in line, line
    assert _stored(store) == 2  # seed 0's two trials
    assert f"2 finished trials saved in {store}" in line


@pytest.mark.slow
@pytest.mark.parametrize("where", ["before", "after"])
def test_debug_shows_the_models_own_traceback_before_or_after_the_command(models, where):
    args = ["audit", "--model", "usermodels:FitRaises", "--seeds", "1", "--workers", "2",
            "--output", str(models / "d.duckdb")]
    args = ["--debug", *args] if where == "before" else [*args, "--debug"]
    proc = subprocess.run(recaudit_cmd(*args), cwd=models, capture_output=True, text=True,
                          env=recaudit_env(), timeout=600)
    assert proc.returncode == 1
    assert 'usermodels.py", line' in proc.stderr and "in fit" in proc.stderr  # the worker's
    assert "ValueError: learning rate must be positive" in proc.stderr
    assert "TrialError: trial usermodels:FitRaises" in proc.stderr


def test_a_rank_without_k_is_refused_before_any_data_is_read(models):
    proc, store = _audit(models, "NoK")
    assert proc.returncode == 2, proc.stderr
    (line,) = proc.stderr.strip().splitlines()
    assert "NoK.rank takes no argument 'k'" in line and "Traceback" not in proc.stderr
    assert not store.exists()


def test_a_constructor_that_fails_is_one_line(models):
    (models / "usermodels.py").write_text(USER_MODELS + '''

class NeedsGPU(Pop):
    def __init__(self, **params):
        raise RuntimeError("no GPU found")


class Strict(Pop):
    def __init__(self, epochs=1):
        self.epochs = epochs
''')
    proc, _ = _audit(models, "NeedsGPU")
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.strip() == ("error: model 'usermodels:NeedsGPU' could not be built: "
                                   "RuntimeError: no GPU found (run with --debug for the "
                                   "traceback)")
    proc, _ = _audit(models, "Strict", "--param", "lr=3")
    assert proc.returncode == 2, proc.stderr
    (line,) = proc.stderr.strip().splitlines()
    assert "unexpected keyword argument 'lr'" in line
    assert line.endswith("hint: its parameters: Strict(epochs=1)"), line


def test_models_check_says_what_rank_returned(models):
    proc = recaudit_here("models", "check", "usermodels:RankArray", "--only", "shapes",
                         "--only", "determinism", cwd=models, env={"COLUMNS": "200"})
    assert proc.returncode == 1, proc.stderr
    assert "AttributeError" not in proc.stdout
    assert proc.stdout.count("RankArray.rank must return RankLists (got ndarray)") == 2
    assert "2 of 2 checks failed (shapes, determinism)" in proc.stdout
