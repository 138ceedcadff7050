"""RecBole adapter: runs only where RECAUDIT_RECBOLE_PYTHON points to a RecBole interpreter."""

import os
import subprocess

import numpy as np
import pytest

from recaudit.errors import ConfigError
from recaudit.models import create
from recaudit.models.testing import (RecommenderConformance, check_learns, leave_last_out,
                                     planted_log)


def _recbole_ok() -> bool:
    py = os.environ.get("RECAUDIT_RECBOLE_PYTHON")
    if not py:
        return False
    try:
        return subprocess.run([py, "-c", "import recbole"], capture_output=True,
                              timeout=120).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


needs_recbole = pytest.mark.skipif(not _recbole_ok(),
                                   reason="RECAUDIT_RECBOLE_PYTHON not set to a RecBole python")
PARAMS = {"hidden_size": 16, "inner_size": 32, "n_layers": 1, "n_heads": 1,
          "train_batch_size": 64, "MAX_ITEM_LIST_LENGTH": 10}


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
