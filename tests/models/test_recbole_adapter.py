"""RecBole adapter: runs where RECAUDIT_RECBOLE_PYTHON points to a RecBole interpreter.

CI builds that interpreter (``.ci/recbole-env``) and sets the variable, so these tests run
there; they skip only when the variable is unset. Set but broken is a failure, not a skip.
"""

import os
import subprocess

import numpy as np
import pytest

from recaudit.errors import ConfigError
from recaudit.models import create
from recaudit.models.testing import (RecommenderConformance, check_learns, leave_last_out,
                                     planted_log)


RECBOLE_PYTHON = os.environ.get("RECAUDIT_RECBOLE_PYTHON")
needs_recbole = pytest.mark.skipif(not RECBOLE_PYTHON,
                                   reason="RECAUDIT_RECBOLE_PYTHON not set to a RecBole python")
PARAMS = {"hidden_size": 16, "inner_size": 32, "n_layers": 1, "n_heads": 1,
          "train_batch_size": 64, "MAX_ITEM_LIST_LENGTH": 10}


@needs_recbole
def test_the_configured_interpreter_runs_recbole():
    proc = subprocess.run([RECBOLE_PYTHON, "-c", "import recbole, numpy; print(recbole.__version__,"
                           " numpy.__version__)"], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    version, numpy_version = proc.stdout.split()
    assert version == "1.2.1" and int(numpy_version.split(".")[0]) < 2


def test_without_interpreter_is_a_config_error(monkeypatch):
    monkeypatch.delenv("RECAUDIT_RECBOLE_PYTHON", raising=False)
    train, _ = leave_last_out(planted_log(n_users=5, length=5))
    with pytest.raises(ConfigError, match="RECAUDIT_RECBOLE_PYTHON"):
        create("recbole", model="SASRec", epochs=1).fit(train, seed=0)


def test_reserved_keys_rejected():
    with pytest.raises(ConfigError, match="seed"):
        create("recbole", params={"seed": 3})


@needs_recbole
@pytest.mark.slow
class TestRecBoleSASRec(RecommenderConformance):
    def make_model(self):
        return create("recbole", model="SASRec", epochs=2, params=PARAMS)

    def make_log(self):
        return planted_log(n_users=15, length=10)


@needs_recbole
@pytest.mark.slow
def test_recbole_sasrec_learns_and_scores_our_catalogue():
    mrr, pop = check_learns(lambda: create("recbole", model="SASRec", epochs=30,
                                           params={**PARAMS, "learning_rate": 0.01}), margin=1.5)
    train, queries = leave_last_out(planted_log())
    m = create("recbole", model="GRU4Rec", epochs=1,
               params={"embedding_size": 8, "hidden_size": 8}).fit(train, seed=0)
    s = m.score(queries)
    assert s.shape == (len(queries), train.n_items) and np.isfinite(s).all()


@needs_recbole
@pytest.mark.slow
def test_recbole_gru4rec_on_ml100k(shared_data):
    """One epoch of RecBole's GRU4Rec on ML-100k (leave-last-out: 97k training targets, ~70 s
    on 2 idle cores): top-50 lists of all 943 users over our catalogue, reproducible scoring,
    better than chance. (Training determinism is the conformance class's job above, on data
    small enough to fit twice.)"""
    from recaudit.data import leave_last_out as split_last
    from recaudit.data.datasets import load

    log = load("ml-100k")
    split = split_last(log)
    params = {"embedding_size": 32, "hidden_size": 32, "MAX_ITEM_LIST_LENGTH": 20,
              "worker_threads": 2}
    m = create("recbole", model="GRU4Rec", epochs=1, params=params).fit(split.train, seed=0)
    lists = m.rank(split.queries, k=50)
    assert lists.items.shape == (len(split.queries), 50) == (943, 50)
    assert ((lists.items >= 0) & (lists.items < log.n_items)).all()
    assert m.rank(split.queries, k=50).equals(lists)
    hits = (lists.items == split.queries.target[:, None]).any(axis=1).mean()
    assert hits > 2 * 50 / log.n_items  # twice a random top-50's hit rate
