"""SIGKILL to one process-pool worker (what the OOM killer does) mid-audit: the pool is
replaced, the unfinished trials run again, the audit finishes with a clean run's numbers.

The model is the user's popularity model (``usermodels:Pop``, each fit a second long under
``RECAUDIT_TEST_SLEEP``, so a worker is killed inside a trial): the pool's recovery is what is
tested, and a torch model only made the test a minute long."""

import json
import os
import signal
import subprocess
import time

import numpy as np
import pytest

from recaudit.audit import AuditStore

from ._entry import recaudit_here
from .conftest import USER_MODELS, recaudit_cmd, recaudit_env


def _args(store, workers):
    return ["audit", "--dataset", "synthetic", "--model", "usermodels:Pop", "-p",
            "random-delete", "-p", "seed-only", "--seeds", "4", "--workers", str(workers),
            "--output", str(store)]


def _workers(pid):
    out = []
    for child in subprocess.run(["pgrep", "-P", str(pid)], capture_output=True,
                                text=True).stdout.split():
        with open(f"/proc/{child}/cmdline", "rb") as fh:
            if b"spawn_main" in fh.read():
                out.append(int(child))
    return out


def _values(store):
    with AuditStore(store, read_only=True) as s:
        t = s.trials()
        q = s.query_values(("rbo", "jaccard"), "synthetic", t.model_label.iloc[0])
    return q.sort_values(["perturbation", "seed", "query"])[["rbo", "jaccard"]].to_numpy()


@pytest.mark.slow
def test_a_killed_worker_is_replaced_and_the_numbers_are_a_clean_runs(tmp_path):
    (tmp_path / "usermodels.py").write_text(USER_MODELS)
    store = tmp_path / "a.duckdb"
    proc = subprocess.Popen(recaudit_cmd(*_args(store, 2)), cwd=tmp_path, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True,
                            env=recaudit_env(RECAUDIT_TEST_SLEEP="1"))
    progress = store.with_name(store.name + ".progress.json")
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        busy = progress.exists() and json.loads(progress.read_text()).get("done", 0) >= 1
        if busy and _workers(proc.pid):
            break
        time.sleep(0.2)
    else:
        proc.kill()
        pytest.fail("no worker finished a trial within three minutes")
    os.kill(_workers(proc.pid)[0], signal.SIGKILL)
    _, err = proc.communicate(timeout=600)
    assert proc.returncode == 0, err
    assert "warning: a worker process died" in err and "run again" in err
    clean = tmp_path / "clean.duckdb"
    clean_run = recaudit_here(*_args(clean, 1), cwd=tmp_path)  # the reference: no process of
    assert clean_run.returncode == 0, clean_run.stderr           # its own needed
    assert np.array_equal(_values(store), _values(clean))
