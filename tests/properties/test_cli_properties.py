"""``recaudit properties`` on a tiny stand-in for the dataset (the loader is patched)."""

from __future__ import annotations

import numpy as np
import pytest

from recaudit.cli import main
from recaudit.data import Interactions
from recaudit.experiment import Store
from recaudit.properties import evolving_frames, property_frame, read_values


@pytest.fixture
def tiny(monkeypatch):
    rng = np.random.default_rng(0)
    n_users, n_items, per = 20, 25, 8
    u = np.repeat(np.arange(n_users), per)
    i = np.concatenate([rng.choice(n_items, per, replace=False) for _ in range(n_users)])
    ts = 1.0e9 + rng.permutation(len(u)) * 1000.0
    log = Interactions.from_codes(u, i, ts, rng.integers(1, 11, len(u)) / 2.0,
                                  n_users=n_users, n_items=n_items,
                                  item_attributes={j: {f"g{j % 3}"} for j in range(n_items)})
    import recaudit.data.datasets as ds

    monkeypatch.setattr(ds, "load", lambda name, **kw: log)
    return log


def test_table_34(tiny, tmp_path, capsys):
    assert main(["properties", "--dataset", "tiny", "--models", "slope-one,user-user",
                 "--folds", "2", "--k", "3", "-o", str(tmp_path / "p.duckdb")]) == 0
    out = capsys.readouterr().out
    for label in ("Precision", "Recall", "NRANKS (min, >=)", "NUPRL (max, <=)", "IANRLCMP",
                  "ARTK (median, =)", "NRTK (max, >=)", "slope-one", "user-user"):
        assert label in out


def test_evolving_table_36(tiny, tmp_path, capsys):
    path = tmp_path / "evo.duckdb"
    assert main(["properties", "--dataset", "tiny", "--models", "slope-one", "--evolving",
                 "--no-accuracy", "--k", "3", "--output", str(path)]) == 0
    out = capsys.readouterr().out
    assert "Maximum absolute % change" in out and "NRI" in out and "%" in out
    assert "slope-one: property values per step" in out and "50%" in out and "100%" in out
    with Store(path, read_only=True) as store:
        steps, summary = evolving_frames(read_values(store))
    assert steps["fraction"].tolist() == [0.5, 0.6, 0.7, 0.8, 0.9, 1.0]
    assert "NRI" in summary.index and "slope-one" in summary.columns


def test_unknown_model_is_a_clean_error(tiny, tmp_path, capsys):
    out = tmp_path / "p.duckdb"
    assert main(["properties", "--dataset", "tiny", "--models", "slope-two", "-o",
                 str(out)]) == 2
    assert "unknown model 'slope-two'" in capsys.readouterr().err
    assert not out.exists()  # nothing half-written


def test_results_go_to_the_store(tiny, tmp_path, capsys):
    path = tmp_path / "props.duckdb"
    assert main(["properties", "--dataset", "tiny", "--models", "funksvd", "--no-accuracy",
                 "--k", "3", "--output", str(path)]) == 0
    with Store(path, read_only=True) as store:
        table = property_frame(read_values(store))
        assert store.meta()["properties.study"]["k"] == 3
    assert table["funksvd"]["NRANKS (min, >=)"] == 3
    assert isinstance(table["funksvd"]["IANR"], frozenset)
