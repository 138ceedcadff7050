"""A damaged baseline cache (a truncated file, a flipped byte) is found on read, retrained
with a warning, and the trial's numbers equal a clean run's — through ``recaudit audit``."""

import numpy as np
import pytest

from recaudit.audit import AuditStore
from recaudit.cli import main
from recaudit.experiment._cache import ArrayCache

ARGS = ["audit", "--dataset", "synthetic", "--sample-users", "100", "--model", "gru4rec",
        "--seeds", "1",
        "--param", "epochs=1", "--param", "embedding_dim=8", "--param", "hidden_dim=8"]


def _rbo(store):
    with AuditStore(store, read_only=True) as s:
        q = s.query_values(("rbo",), "synthetic", s.trials().model_label.iloc[0])
    return q[q.perturbation == "random-delete"].sort_values("query").rbo.to_numpy()


@pytest.mark.parametrize("damage", ["truncate", "flip"])
def test_a_damaged_baseline_is_retrained_with_a_warning(tmp_path, capsys, damage):
    store = tmp_path / "a.duckdb"
    assert main(ARGS + ["-p", "seed-only", "--output", str(store)]) == 0
    (entry,) = (tmp_path / "a.duckdb.baselines").glob("*.npz")
    raw = entry.read_bytes()
    if damage == "truncate":
        entry.write_bytes(raw[: len(raw) // 2])
    else:  # a flipped byte inside the stored rank lists: the zip still opens
        arrays = dict(np.load(entry))
        arrays["items"] = arrays["items"].copy()
        arrays["items"][0, :2] = arrays["items"][0, 1::-1]
        np.savez(entry, **arrays)
    capsys.readouterr()
    assert main(ARGS + ["-p", "seed-only", "-p", "random-delete", "--output", str(store)]) == 0
    err = capsys.readouterr().err
    assert "warning: cached entry" in err and "computed again and replaced" in err
    clean = tmp_path / "clean.duckdb"
    assert main(ARGS + ["-p", "random-delete", "--output", str(clean)]) == 0
    assert np.array_equal(_rbo(store), _rbo(clean))
    assert ArrayCache(tmp_path / "a.duckdb.baselines").get(entry.stem) is not None  # replaced
