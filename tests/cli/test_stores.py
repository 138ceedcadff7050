"""``recaudit status / results / export / report`` on a store of every study, and on one store
holding all four, through the real entry point: everything is read from the studies'
declarations."""

from __future__ import annotations

import io
import json

import numpy as np
import pandas as pd
import pytest

from recaudit.cli import main
from recaudit.data import Interactions

from .conftest import TINY


def _ratings() -> Interactions:
    rng = np.random.default_rng(5)
    keys = rng.choice(25 * 20, size=200, replace=False)
    return Interactions.from_codes(keys // 20, keys % 20, timestamp=np.arange(200) * 1000,
                                   rating=rng.integers(2, 11, 200) / 2, n_users=25,
                                   n_items=20, name="tiny")


def _write(kind: str, out, tmp, monkeypatch) -> None:
    if kind == "audit":
        cfg = tmp / "audit.toml"
        cfg.write_text(TINY.format(out=out))
        assert main(["run", str(cfg)]) == 0
    elif kind == "fuzz":
        csv = tmp / "ratings.csv"
        _ratings().to_df().to_csv(csv, index=False)
        assert main(["fuzz", "--path", str(csv), "--model", "slope-one", "--heuristics",
                     "ZERO,ARAND", "--sizes", "1", "--sets", "2", "--k", "5", "-o",
                     str(out)]) == 0
    elif kind == "properties":
        import recaudit.data.datasets as ds

        log = _ratings()
        with monkeypatch.context() as mp:
            mp.setattr(ds, "load", lambda name, **kw: log)
            assert main(["properties", "--dataset", "tiny", "--models", "slope-one", "--k",
                         "3", "--no-accuracy", "-o", str(out)]) == 0
    else:
        assert main(["simulate", "mirror", "--scenario", "decoy-slate", "--mix", "0,1",
                     "--seeds", "2", "--algorithms", "DeepFM", "--n-train", "40",
                     "--n-eval", "10", "--epochs", "1", "-o", str(out)]) == 0


#: Trials each tiny study plans, and the rows ``recaudit results`` gives for it.
TRIALS = {"audit": 2, "fuzz": 4, "properties": 1, "mirror": 2}
#: MIRROR: two oracles x (CTR, FCTR, ManiScore) + DeepFM at two mixes x (those three, AUC, NDCG).
ROWS = {"audit": 2, "fuzz": 4, "properties": 1, "mirror": 2 * 3 + 2 * 5}


@pytest.fixture(scope="module")
def stores(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("stores")
    mp = pytest.MonkeyPatch()
    out = {}
    try:
        for kind in TRIALS:
            out[kind] = tmp / f"{kind}.duckdb"
            _write(kind, out[kind], tmp, mp)
            _write(kind, tmp / "all.duckdb", tmp, mp)  # every study into one store too
    finally:
        mp.undo()
    out["all"] = tmp / "all.duckdb"
    return out


@pytest.mark.parametrize("kind", sorted(TRIALS))
def test_status_counts_the_trials_of_each_study(stores, kind, capsys):
    capsys.readouterr()
    assert main(["status", str(stores[kind])]) == 0
    out = " ".join(capsys.readouterr().out.split())  # lines wrap at the console's width
    n = TRIALS[kind]
    assert f"{n} of the {n} planned trials done" in out


@pytest.mark.parametrize("kind", sorted(TRIALS))
def test_results_as_csv_json_and_table(stores, kind, capsys):
    capsys.readouterr()
    assert main(["results", str(stores[kind]), "--format", "csv"]) == 0
    frame = pd.read_csv(io.StringIO(capsys.readouterr().out))
    assert len(frame) == ROWS[kind] and len(frame.columns) > 3
    assert main(["results", str(stores[kind]), "--format", "json"]) == 0
    assert len(json.loads(capsys.readouterr().out)) == ROWS[kind]
    assert main(["results", str(stores[kind])]) == 0
    assert capsys.readouterr().out.strip()


@pytest.mark.parametrize("kind", sorted(TRIALS))
def test_export_writes_the_study_tables(stores, kind, tmp_path, capsys):
    assert main(["export", str(stores[kind]), str(tmp_path / "x")]) == 0
    written = {p.stem for p in (tmp_path / "x").glob("*.parquet")}
    tables = {"audit": {"trials", "query_results", "perturbations"}, "fuzz": {"fuzz_trials"},
              "properties": {"property_trials", "property_values"},
              "mirror": {"mirror_trials", "mirror_results"}}[kind]
    assert tables | {"meta", "plans"} <= written


def test_a_store_of_four_studies(stores, capsys, tmp_path):
    path = stores["all"]
    capsys.readouterr()
    assert main(["status", str(path)]) == 0
    out = " ".join(capsys.readouterr().out.split())
    for kind, n in TRIALS.items():
        assert f"{n} of the {n} planned trials done" in out, kind
    assert main(["results", str(path), "--format", "csv"]) == 2
    assert "holds several studies" in capsys.readouterr().err
    for kind in TRIALS:
        assert main(["results", str(path), "--format", "json", "--study", kind]) == 0
        assert len(json.loads(capsys.readouterr().out)) == ROWS[kind]
    pytest.importorskip("matplotlib")
    assert main(["report", str(path), "-o", str(tmp_path / "r.html")]) == 0
    html = (tmp_path / "r.html").read_text()
    for section in ("Rank-list sensitivity", "Property templates", "Fuzzing", "MIRROR"):
        assert section in html


def test_what_a_stopped_command_says_it_saved_counts_every_studys_trials(stores):
    # an interrupted `reproduce run` of a fuzzing experiment said "0 finished trials saved":
    # only the audit's table was counted
    from recaudit.cli import _saved

    for kind, n in TRIALS.items():
        assert _saved(stores[kind]).startswith(f"{n} finished trial{'' if n == 1 else 's'} "
                                               f"saved in {stores[kind]}")
    everything = sum(TRIALS.values())
    folder = stores["all"].parent  # the four stores of one study each, and the one of all four
    assert _saved(folder).startswith(f"{2 * everything} finished trials saved in the stores "
                                     f"under {folder}")
