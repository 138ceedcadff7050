"""The study runner (Shriver 2018 §4.2): ZERO, resume, purity, parallel runs, tables, CLI."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from recaudit.audit import DatasetSpec, ModelSpec, load_dataset
from recaudit.fuzz import (
    FuzzRecord,
    FuzzStudy,
    instability_table,
    load_results,
    portfolio_table,
    run_fuzz_trial,
    run_study,
    significance,
    time_table,
)


@pytest.fixture
def csv_path(tmp_path, fz):
    log = fz.random_log(7, n_users=40, n_items=30, n=400, attrs=False)
    path = tmp_path / "log.csv"
    log.to_df().to_csv(path, index=False)
    return str(path)


def _study(csv_path, out, **kw):
    opts = dict(models=(ModelSpec("funksvd"),), heuristics=("ZERO", "ARAND"),
                sizes=(1,), sets=2, dataset=DatasetSpec("file", path=csv_path,
                                                        min_user_interactions=0),
                k=5, output=str(out))
    opts.update(kw)
    return FuzzStudy(**opts)


@pytest.mark.parametrize("model", ["funksvd", "item-item"])
def test_zero_gives_zero_distance_for_deterministic_models(csv_path, tmp_path, model):
    study = _study(csv_path, tmp_path / "z.duckdb", models=(ModelSpec(model),),
                   heuristics=("ZERO",), sizes=(1, 10))
    res = load_results(run_study(study))
    assert len(res) == 4 and (res["n_modifications"] == 0).all()
    assert (res[["aod", "jaccard", "topout"]] == 0).all().all()
    assert res["stable_topout"].all()
    assert res["delta"].tolist() == pytest.approx([100 / 400, 100 / 400, 1000 / 400, 1000 / 400])


def test_resume_skips_finished_trials_and_records_reapply(csv_path, tmp_path):
    out = tmp_path / "r.duckdb"
    run_study(_study(csv_path, out, heuristics=("ARAND", "RMU")))
    first = load_results(out)
    calls = []
    run_study(_study(csv_path, out, heuristics=("ARAND", "RMU"), sets=3),
              progress=lambda d, t: calls.append((d, t)))
    assert calls[0] == (4, 6) and calls[-1] == (6, 6)
    second = load_results(out)
    kept = second[second["set_index"] < 2].reset_index(drop=True)
    pd.testing.assert_frame_equal(kept, first)  # untouched, not recomputed
    # every stored record rebuilds its modified log from the original one
    log = load_dataset(DatasetSpec("file", path=csv_path, min_user_interactions=0))
    for text in second["record"]:
        rec = FuzzRecord.from_dict(json.loads(text))
        assert rec.apply(log).fingerprint() == rec.fingerprint_after
    assert set(second.loc[second["heuristic"] == "RMU", "kind"]) == {"remove"}


def test_trials_are_pure(csv_path, tmp_path):
    study = _study(csv_path, tmp_path / "p.duckdb", heuristics=("AMR",), sizes=(10,))
    trial = study.trials()[1]
    a, b = run_fuzz_trial(trial), run_fuzz_trial(trial)
    cols = ["trial_id", "aod", "jaccard", "topout", "record", "n_modifications"]
    assert {c: a[c] for c in cols} == {c: b[c] for c in cols}
    assert a["n_modifications"] == 10 and a["kind"] == "add"


@pytest.mark.slow
def test_parallel_run_gives_identical_numbers(csv_path, tmp_path):
    kw = dict(heuristics=("ARAND", "AMU"), sizes=(1, 10))
    serial = load_results(run_study(_study(csv_path, tmp_path / "s.duckdb", **kw)))
    pooled = load_results(run_study(_study(csv_path, tmp_path / "w.duckdb", workers=2, **kw)))
    cols = ["trial_id", "heuristic", "size", "set_index", "aod", "jaccard", "topout", "record"]
    pd.testing.assert_frame_equal(serial[cols], pooled[cols])


def _welch_p_greater(x, y):
    """Welch's one-sided p-value written out (Welch-Satterthwaite degrees of freedom)."""
    vx, vy = np.var(x, ddof=1) / len(x), np.var(y, ddof=1) / len(y)
    t = (np.mean(x) - np.mean(y)) / math.sqrt(vx + vy)
    df = (vx + vy) ** 2 / (vx**2 / (len(x) - 1) + vy**2 / (len(y) - 1))
    return stats.t.sf(t, df)


def _results():
    vals = {"ARAND": [0.1, 0.2] * 4, "AMR": [0.5, 0.6, 0.55, 0.65] * 2,
            "ALI": [0.0] * 8, "AMU": [0.1, 0.25, 0.15, 0.2] * 2, "ZERO": [0.0] * 8,
            "RRAND": [0.0] * 8, "RMU": [0.0] * 8}
    kind = {"ARAND": "add", "AMR": "add", "ALI": "add", "AMU": "add", "ZERO": "none",
            "RRAND": "remove", "RMU": "remove"}
    rows = [{"model": "m", "size": 10, "heuristic": h, "kind": kind[h], "set_index": j,
             "topout": v, "delta": 0.3, "gen_seconds": 0.01 * (j + 1)}
            for h, vs in vals.items() for j, v in enumerate(vs)]
    return pd.DataFrame(rows), vals


def test_significance_marks_against_written_out_welch():
    res, vals = _results()
    sig = significance(res).set_index("heuristic")
    for h in ("AMR", "AMU", "ALI"):
        assert sig.loc[h, "p_greater"] == pytest.approx(
            _welch_p_greater(vals[h], vals["ARAND"]), rel=1e-9)
        assert sig.loc[h, "baseline"] == "ARAND"
    assert sig.loc["AMR", "mark"] == "bold" and sig.loc["AMR", "exceeds"]   # 0.575 >= 0.3
    assert sig.loc["ALI", "mark"] == "italic" and sig.loc["ZERO", "mark"] == "italic"
    assert sig.loc["AMU", "p_greater"] > 0.05 and sig.loc["AMU", "mark"] == ""
    assert sig.loc["RMU", "mark"] == ""  # both constant: no test, no mark
    assert math.isnan(sig.loc["RMU", "p_greater"])
    assert pd.isna(sig.loc["ARAND", "baseline"])


def test_tables_render_marks():
    res, _ = _results()
    sig = significance(res)
    t = instability_table(sig, "add")
    assert list(t.columns) == ["ZERO", "ARAND", "AMU", "ALI", "AMR"]
    assert t.loc["m,10", "AMR"] == "***0.575000**" and t.loc["m,10", "ALI"] == "_0.000000_"
    assert instability_table(sig, "add", style="plain").loc["m,10", "AMR"] == "*0.575000"
    assert list(instability_table(sig, "remove").columns) == ["RRAND", "RMU"]
    assert portfolio_table(sig).empty  # no APORTFOLIO rows
    tt = time_table(res)
    assert tt.loc["AMR", (10, "mean")] == pytest.approx(0.045)
    assert tt.loc["AMR", (10, "variance")] == pytest.approx(np.var(
        [0.01 * (j + 1) for j in range(8)], ddof=1))


def test_study_validation(csv_path, tmp_path):
    from recaudit.errors import ConfigError

    with pytest.raises(ConfigError, match="unknown fuzzing heuristic"):
        _study(csv_path, tmp_path / "x.duckdb", heuristics=("NOPE",))
    with pytest.raises(ConfigError, match="sizes"):
        _study(csv_path, tmp_path / "x.duckdb", sizes=(0,))


def test_cli_fuzz(csv_path, tmp_path, capsys):
    from recaudit.cli import main

    out = tmp_path / "cli.duckdb"
    code = main(["fuzz", "--path", csv_path, "--model", "funksvd", "--heuristics",
                 "ZERO,ARAND,AMR,RRAND,RMU", "--sizes", "1,10", "--sets", "2", "--k", "5",
                 "--output", str(out)])
    text = capsys.readouterr().out
    assert code == 0
    assert "Table 4.6" in text and "Table 4.7" in text and "Table 4.5" in text
    assert len(load_results(out)) == 5 * 2 * 2
    assert main(["fuzz", "--path", csv_path, "--heuristics", "XYZ", "--output",
                 str(out)]) == 2


def test_aggregate_f_and_study_filter(csv_path, tmp_path):
    out = tmp_path / "f.duckdb"
    avg = _study(csv_path, out, heuristics=("ARAND",), sizes=(10,))
    mx = _study(csv_path, out, heuristics=("ARAND",), sizes=(10,), f="max")
    run_study(avg)
    run_study(mx)
    a, m = load_results(out, avg), load_results(out, mx)
    assert len(load_results(out)) == 4 and len(a) == len(m) == 2
    assert set(a["f"]) == {"avg"} and set(m["f"]) == {"max"}
    # the same modification sets (seeds do not depend on f): max >= avg, max of TopOut is 0/1
    assert (m["jaccard"].to_numpy() >= a["jaccard"].to_numpy()).all()
    assert set(m["topout"]) <= {0.0, 1.0}
    assert a["record"].tolist() == m["record"].tolist()


def test_a_baseline_is_trained_once_and_kept_beside_the_store(csv_path, tmp_path, monkeypatch):
    """Every trial of a (dataset, model, seed, k) reads one baseline: trained by the first,
    kept in ``<store>.baselines`` for the rest, other workers and later runs."""
    from recaudit.experiment import ArrayCache
    from recaudit.fuzz import _study as fz

    fits = []
    real = fz._fit_rank
    monkeypatch.setattr(fz, "_fit_rank", lambda *a: fits.append(a[1]) or real(*a))
    monkeypatch.setattr(fz, "_RECENT", {})
    out = tmp_path / "b.duckdb"
    study = _study(csv_path, out, heuristics=("ARAND",), sizes=(1,), sets=3)
    run_study(study)
    log = load_dataset(study.dataset)
    base = [t for t in fits if t.fingerprint() == log.fingerprint()]
    assert len(base) == 1 and len(fits) == 1 + 3       # one baseline, three modified logs
    cache = ArrayCache(str(out) + ".baselines")
    job = study.plan()[0].job
    queries, lists = fz._baseline(job.trial, job.cache)
    key = next(iter(fz._RECENT))
    assert cache.has(key) and (cache.get(key)["items"] == lists.items).all()
    # a new process (no memo) reads it instead of training
    monkeypatch.setattr(fz, "_RECENT", {})
    fits.clear()
    row = fz.run_fuzz_trial(job.trial, cache=job.cache)
    assert len(fits) == 1 and row["trial_id"] == study.plan()[0].id


def test_a_stabilised_model_is_refused_with_its_key(csv_path, tmp_path):
    from recaudit.errors import ConfigError
    from recaudit.experiment import ModelSpec

    with pytest.raises(ConfigError, match=r"models\[0\]\.stabilise"):
        _study(csv_path, tmp_path / "x.duckdb",
               models=(ModelSpec("item-item", stabilise={"method": "ensemble", "n": 2}),))
