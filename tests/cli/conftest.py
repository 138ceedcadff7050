"""What the command-line tests share: a tiny audit config (synthetic data, a tiny GRU4Rec), a
user's own model module, the ``recaudit`` command as a subprocess, and a newcomer's audit run
through the command."""

import os
import sys
from pathlib import Path

import pytest

import recaudit

#: Format with ``out=`` the store path.
TINY = """
name = "cli"
output = "{out}"
seeds = [0]
perturbations = ["none", "random-delete"]

[[datasets]]
name = "synthetic"
options = {{ n_users = 30, n_items = 20, n_clusters = 3, mean_length = 12, seed = 1 }}

[[models]]
name = "gru4rec"
params = {{ epochs = 1, embedding_dim = 8, hidden_dim = 8 }}

[metrics]
k = 5
"""


#: The folder holding this checkout's ``recaudit`` package, for a subprocess's PYTHONPATH.
SRC = str(Path(recaudit.__file__).resolve().parents[1])

#: A user's own model, as a user writes one (``--model usermodels:Pop``): popularity, whose
#: ``fit`` sleeps ``RECAUDIT_TEST_SLEEP`` seconds (``"60"``, or ``"0:60"`` for seed 0 only;
#: read from the environment, so the sleep is no parameter and a rerun without it resumes the
#: same trials), and its broken variants.
USER_MODELS = '''
import os
import time

import numpy as np

from recaudit.data import RankLists
from recaudit.models import as_queries


class Pop:
    def __init__(self, **params):
        self.params = params

    def fit(self, train, *, seed):
        sleep = os.environ.get("RECAUDIT_TEST_SLEEP", "")
        if sleep:
            seconds = sleep.split(":")[-1]
            if ":" not in sleep or int(sleep.split(":")[0]) == seed:
                time.sleep(float(seconds))
        self.counts_ = np.bincount(train.item, minlength=train.n_items).astype(float)
        return self

    def rank(self, queries, k=None):
        q = as_queries(queries)
        order = np.argsort(-self.counts_, kind="stable")
        items = np.tile(order, (len(q), 1))
        return RankLists(items[:, :k] if k else items)


class FitRaises(Pop):
    def fit(self, train, *, seed):
        raise ValueError("learning rate must be positive")


class RankArray(Pop):
    def rank(self, queries, k=None):
        return super().rank(queries, k).items


class RankShort(Pop):
    def rank(self, queries, k=None):
        return RankLists(super().rank(queries, k).items[:1])


class NoK(Pop):
    def rank(self, queries):
        return super().rank(queries)
'''


def recaudit_cmd(*args: str) -> list[str]:
    """``python -m recaudit ARGS``: the command as a user runs it."""
    return [sys.executable, "-m", "recaudit", *args]


def recaudit_env(**extra: str) -> dict[str, str]:
    """The environment of a ``recaudit`` subprocess: this checkout's package first."""
    path = os.pathsep.join(p for p in (SRC, os.environ.get("PYTHONPATH", "")) if p)
    return {**os.environ, "PYTHONPATH": path, "COLUMNS": "200", **extra}


@pytest.fixture(scope="session")
def pop_audit(tmp_path_factory):
    """A finished audit through the command, as a newcomer runs one: a model of their own
    (``popmodel:Pop``, labelled ``my pop``) on a tiny file of their own, the default
    perturbations (random-delete and the seed-only floor), two seeds. Returns the folder, the
    store and the completed process (stdout and stderr pipes, not a terminal)."""
    from ._entry import recaudit, tiny_log, with_model

    folder = tmp_path_factory.mktemp("newcomer")
    tiny_log(folder)
    proc = recaudit("audit", "--dataset", "tiny.csv", "--model", with_model(folder),
                    "--label", "my pop", "--seeds", "2", "--k", "5", "-o", "pop.duckdb",
                    cwd=folder)
    assert proc.returncode == 0, proc.stderr
    return folder, folder / "pop.duckdb", proc
