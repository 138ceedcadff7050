"""``recaudit._memory.keep_freed_memory``: the allocator setting of recaudit's own processes
changes no number, and can be turned off."""

import os
import subprocess
import sys

import numpy as np
import pytest

SCRIPT = """
import sys
import numpy as np
from recaudit._memory import keep_freed_memory
kept = keep_freed_memory() if sys.argv[1] == "kept" else False
from recaudit.data import synthetic, temporal_ratio_split
from recaudit.models import create
train = temporal_ratio_split(synthetic(seed=3, n_users=60, n_items=400, n_clusters=8)).train
model = create("jodie", epochs=2, embedding_dim=16).fit(train, seed=0)
np.save(sys.argv[2], model.rank(train, k=20).items)
print(kept)
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's allocator only")
def test_keeping_freed_memory_changes_no_rank_list(tmp_path):
    out = {}
    for mode in ("kept", "default"):
        path = tmp_path / f"{mode}.npy"
        res = subprocess.run([sys.executable, "-c", SCRIPT, mode, str(path)],
                             capture_output=True, text=True, timeout=300,
                             env={**os.environ, "RECAUDIT_KEEP_FREED_MEMORY": "1"})
        assert res.returncode == 0, res.stderr
        out[mode] = (res.stdout.strip().splitlines()[-1], np.load(path))
    assert out["kept"][0] == "True" and out["default"][0] == "False"
    np.testing.assert_array_equal(out["kept"][1], out["default"][1])


def test_the_setting_can_be_turned_off(monkeypatch):
    from recaudit._memory import keep_freed_memory

    monkeypatch.setenv("RECAUDIT_KEEP_FREED_MEMORY", "0")
    assert keep_freed_memory() is False
