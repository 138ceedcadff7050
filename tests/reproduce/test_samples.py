"""A record's samples kept compact (float32, a column per key the claims and values read, no
file over 8 MB) without changing a claim: the same states, differences and intervals as the
full-precision samples; and the committed records within their size."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from recaudit.reproduce import (Claim, Experiment, Measures, Value, evaluate_claims,
                                read_samples, write_samples)
from recaudit.reproduce import compact_records
from recaudit.reproduce._samples import MAX_BYTES, keys_read, sample_files
from recaudit.reproduce.rules import Bound, Greater, Less, Not, Within, ordered

REPO = Path(__file__).parents[2]
RECORDS = REPO / "docs" / "reproduction" / "records"


def _frame(values, seeds=1, draws=1, units=None):
    n = len(values) // (seeds * draws)
    units = units or [str(q) for q in range(n)]
    reps = [f"{s}:{d}" for s in range(seeds) for d in range(draws) for _ in range(n)]
    return pd.DataFrame({"replicate": reps, "unit": units * (seeds * draws),
                         "value": np.asarray(values, dtype=np.float64)})


def _fixture() -> dict[str, pd.DataFrame]:
    """Per-query similarities as an audit records them: continuous overlaps near one
    another (two seeds x three draws: 4,800 values, stored as float32), a perturbation that
    draws nothing (one draw per seed: a small key, kept exact), rationals with exact ties
    (Jaccard-like, kept exact), a constant and a tie."""
    rng = np.random.default_rng(11)
    q = 800
    base = np.clip(rng.beta(8, 2, q), 0, 1)
    seeds, draws = 2, 3
    out = {}
    for name, shift in (("random", 0.0), ("earliest", -0.004), ("latest", 0.0005)):
        vals = np.concatenate([np.clip(base + 0.01 * s + shift
                                       + 0.02 * rng.standard_normal(q), 0, 1)
                               for s in range(seeds) for _ in range(draws)])
        out[f"m/{name}/ao"] = _frame(vals, seeds, draws)
    casper = np.concatenate([np.clip(base + 0.01 * s - 0.003 + 0.02 * rng.standard_normal(q),
                                     0, 1) for s in range(seeds)])
    out["m/casper/ao"] = _frame(casper, seeds, 1)
    jac = rng.integers(0, 20, (2, q)) / 19.0                # exact ties across queries
    out["m/random/jaccard"] = _frame(jac[0])
    out["m/latest/jaccard"] = _frame(np.where(rng.random(q) < 0.3, jac[0], jac[1]))
    out["m/zero/topout"] = _frame(np.zeros(5), units=[f"s{i}" for i in range(5)])
    out["m/rand/topout"] = _frame(np.zeros(5), units=[f"s{i}" for i in range(5)])
    out["m/random/rbo"] = _frame(rng.random(q))             # a companion: not kept
    return out


def _exp(frames) -> Experiment:
    k = "m/{}/ao".format
    return Experiment(
        name="fake-compact", paper="Nobody et al. 2099", title="A fake", artefacts="Table 9",
        data="none", scales={"small": "tiny"},
        runner=lambda w, s, n: Measures({k: float(f.value.mean()) for k, f in frames.items()},
                                        frames),
        values=(Value(k("random"), "random", 0.8, "Table 9", also=("m/random/rbo",)),
                Value(k("casper"), "casper", 0.8, "Table 9")),
        claims=(Claim("earliest < random < latest", "§1",
                      ordered(k("earliest"), k("random"), k("latest"))),
                Claim("CASPER below random", "§2", Less(k("casper"), k("random"))),
                Claim("Jaccard lower for latest", "§3",
                      Less("m/latest/jaccard", "m/random/jaccard")),
                Claim("random within 1 % of latest", "§4", Within(k("random"), k("latest"),
                                                                  0.01)),
                Claim("overlap below 1", "§5", Bound(k("random"), 1.0)),
                Claim("ZERO beats RAND", "§6", Greater("m/zero/topout", "m/rand/topout")),
                Claim("ZERO never beats RAND", "§6",
                      Not(Greater("m/zero/topout", "m/rand/topout")))))


def test_only_the_keys_claims_and_values_read_are_kept(tmp_path):
    frames = _fixture()
    exp = _exp(frames)
    keys = keys_read(exp)
    assert "m/random/rbo" not in keys and {"m/casper/ao", "m/zero/topout"} <= set(keys)
    write_samples(tmp_path / "samples.parquet", frames, keys)
    back = read_samples(tmp_path / "samples.parquet")
    assert set(back) == set(keys)
    for key in keys:
        full, got = frames[key], back[key]
        assert list(got.replicate) == list(full.replicate) and list(got.unit) == list(
            full.unit), key                                    # the measured order
        assert got.value.dtype == np.float64
        np.testing.assert_allclose(got.value, full.value, rtol=6e-8, atol=0)
        # float32 keeps equal values equal (a zero paired difference stays zero)
        assert (got.value.to_numpy()[:, None] == got.value.to_numpy()[None, :]).sum() >= \
            (full.value.to_numpy()[:, None] == full.value.to_numpy()[None, :]).sum()
    stored = pd.read_parquet(tmp_path / "samples.parquet")
    assert len(stored) == 2 * 3 * 800 + 5                       # (replicate, unit) rows
    large = {k for k in keys if len(frames[k]) > 4096}
    assert large == {f"m/{p}/ao" for p in ("random", "earliest", "latest")}
    assert {str(stored[k].dtype) for k in large} == {"float32"}
    assert {str(stored[k].dtype) for k in set(keys) - large} == {"float64"}
    for k in set(keys) - large:                                 # exact: ties kept
        assert back[k].value.tolist() == frames[k].value.tolist()


def test_the_claims_decide_alike_on_full_and_compact_samples(tmp_path):
    frames = _fixture()
    exp = _exp(frames)
    means = {k: float(f.value.mean()) for k, f in frames.items()}
    full = evaluate_claims(exp, Measures(means, frames))
    write_samples(tmp_path / "samples.parquet", frames, keys_read(exp))
    compact = evaluate_claims(exp, Measures(means, read_samples(tmp_path / "samples.parquet")))
    assert [c["state"] for c in compact] == [c["state"] for c in full]
    assert {c["state"] for c in full} >= {"holds", "undecided"}   # the fixture decides some
    for c_full, c_compact in zip(full, compact, strict=True):
        for a, b in zip(c_full["tests"], c_compact["tests"], strict=True):
            assert (a["test"], a["truth"], a["tie"], a["levels"]) == \
                (b["test"], b["truth"], b["tie"], b["levels"])
            for field in ("difference", "low", "high", "detectable"):
                assert b[field] == pytest.approx(a[field], rel=1e-5, abs=1e-9), field
            assert b["p_adjusted"] == pytest.approx(a["p_adjusted"], rel=1e-2, abs=1e-12)


def test_a_large_record_is_written_in_parts_within_the_limit(tmp_path):
    rng = np.random.default_rng(3)
    frames = {f"k{i}": _frame(rng.random(4000)) for i in range(6)}
    path = tmp_path / "samples.parquet"
    files = write_samples(path, frames, list(frames), limit=40_000)
    assert len(files) > 1 and files == sample_files(path)
    assert all(f.stat().st_size <= 40_000 for f in files)
    back = read_samples(path)
    assert set(back) == set(frames)
    for k, f in frames.items():
        np.testing.assert_allclose(back[k].value, f.value, rtol=6e-8)
    write_samples(path, frames, list(frames))                  # one part: the rest removed
    assert sample_files(path) == [path] and set(read_samples(path)) == set(frames)


def test_records_of_the_long_layout_are_migrated_once(tmp_path, monkeypatch):
    from recaudit.reproduce import _recording as recording

    frames = _fixture()
    exp = _exp(frames)
    monkeypatch.setattr(recording, "PAPERS", ())
    monkeypatch.setattr(recording, "_EXTRA", {exp.name: exp})
    folder = tmp_path / exp.name / "small"
    folder.mkdir(parents=True)
    long = pd.concat([f.assign(key=k) for k, f in frames.items()], ignore_index=True)
    long[["key", "replicate", "unit", "value"]].to_parquet(folder / "samples.parquet")
    assert set(read_samples(folder / "samples.parquet")) == set(frames)   # read as it is
    (path, before, after), = compact_records(tmp_path)
    assert path == folder / "samples.parquet" and after < before
    assert set(read_samples(path)) == set(keys_read(exp))
    assert compact_records(tmp_path)[0][2] == after                       # idempotent


def test_the_migration_command_rewrites_a_records_folder(tmp_path, capsys):
    """``recaudit reproduce compact --records DIR`` through the real entry point, on a record
    of a registered experiment written in the long layout."""
    from recaudit.cli import main

    folder = tmp_path / "zhu2023-table3" / "small"
    folder.mkdir(parents=True)
    rng = np.random.default_rng(5)
    long = pd.DataFrame({"key": ["planner/ctr"] * 10 + ["unused/key"] * 10,
                         "replicate": [str(i) for i in range(10)] * 2, "unit": "all",
                         "value": rng.random(20)})
    long.to_parquet(folder / "samples.parquet")
    assert main(["reproduce", "compact", "--records", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "1 record(s):" in out and "samples.parquet" in out
    back = read_samples(folder / "samples.parquet")
    assert list(back) == ["planner/ctr"]                  # only what the claims read
    assert back["planner/ctr"].value.tolist() == long.value[:10].tolist()   # small: exact


def test_a_record_written_by_a_run_is_compact_and_judged_as_stored(tmp_path, monkeypatch):
    from recaudit.reproduce import _recording as recording, render_report

    frames = _fixture()
    exp = _exp(frames)
    monkeypatch.setattr(recording, "PAPERS", ())
    monkeypatch.setattr(recording, "_EXTRA", {exp.name: exp})
    rec = recording.run(exp.name, "small", tmp_path)
    stored = pd.read_parquet(tmp_path / exp.name / "small" / "samples.parquet")
    assert "key" not in stored and "m/random/rbo" not in stored
    on_disk = json.loads((tmp_path / exp.name / "small" / "record.json").read_text())
    again = evaluate_claims(exp, recording.load_measures(tmp_path, on_disk), "small")
    assert [c["tests"] for c in again] == json.loads(json.dumps(
        [c["tests"] for c in rec["claims"]], default=float))   # the record is the page's
    assert f"**{rec['verdict']}**" in render_report(tmp_path)


def test_the_committed_records_stay_small():
    files = [p for p in RECORDS.rglob("*") if p.is_file()]
    assert files
    sizes = {p.relative_to(RECORDS): p.stat().st_size for p in files}
    too_big = {str(p): s for p, s in sizes.items() if s > 8_000_000}
    assert not too_big, too_big
    assert sum(sizes.values()) < 30_000_000, sum(sizes.values())
    assert MAX_BYTES < 8_000_000
    for path in RECORDS.glob("*/*/samples*.parquet"):
        stored = pd.read_parquet(path)
        assert "key" not in stored.columns, f"{path}: the long layout (recaudit reproduce " \
                                            "compact rewrites it)"
        floats = [c for c in stored.columns if c not in ("replicate", "unit")]
        assert all(str(stored[c].dtype) in ("float32", "float64") for c in floats)
        experiment = path.parent.parent.name
        from recaudit.reproduce import get

        assert set(floats) <= set(keys_read(get(experiment))), path
