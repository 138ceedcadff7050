"""Issue 47, item 3: every number a result table promises is readable at 80 columns (and at
100), in a terminal and in a pipe alike (off a terminal: ``COLUMNS``, else 80): no cell cut to
``…``, no line wider than the console, every promised column present; ``--format csv`` and
``json`` give the library's numbers exactly."""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys

import pandas as pd
import pytest

from recaudit.audit import compare_models, exposure, most_changed, slices, summary

from ._entry import POP, environment, recaudit_here, tiny_log

MODELS = POP + '''

class Loud(Pop):
    def __init__(self, noise=50.0):
        super().__init__(noise)
'''


@pytest.fixture(scope="module")
def audit(tmp_path_factory):
    """Two models, three perturbations (two of them floors), two seeds: the widest audit
    table there is (both floors' p columns), and the models' comparison under it."""
    folder = tmp_path_factory.mktemp("width")
    tiny_log(folder, users=40)
    (folder / "two.py").write_text(MODELS)
    args = ["audit", "--dataset", "tiny.csv", "--model", "two:Pop", "--model", "two:Loud",
            "-p", "random-delete", "-p", "seed-only", "-p", "rerun", "--seeds", "2", "--k",
            "5", "-o", "w.duckdb"]
    proc = recaudit_here(*args, cwd=folder)
    assert proc.returncode == 0, proc.stderr
    return folder, folder / "w.duckdb", args


def _shown(args: list[str], folder, columns: int | None) -> str:
    env = {"COLUMNS": str(columns)} if columns else None
    if columns is None:
        os.environ.pop("COLUMNS", None)
    proc = recaudit_here(*args, cwd=folder, env=env)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def _whole(text: str, columns: int) -> None:
    assert "…" not in text
    too_wide = [line for line in text.splitlines() if len(line) > columns]
    assert not too_wide, too_wide[:3]


def _numbers(text: str) -> set[str]:
    return set(re.findall(r"[+-]?\d+\.\d{4}", text))


@pytest.mark.parametrize("columns", [80, 100])
def test_the_audit_table_is_whole_at_80_and_100_columns(audit, columns):
    folder, store, args = audit
    text = _shown(args, folder, columns)
    _whole(text, columns)
    frame = summary(store)
    for word in ("perturbation", "measure", "mean", "95 % interval", "RBO", "FRBO@k",
                 "Jaccard@k", "ΔMRR", "rerun", "seed-only", "queries", "seeds"):
        assert word in text, word
    shown = _numbers(text)
    for _, r in frame.iterrows():  # every mean and both ends of every interval
        for m, signed in (("rbo", False), ("frbo", False), ("jaccard", False),
                          ("mrr_change", True)):
            fmt = "{:+.4f}" if signed else "{:.4f}"
            assert {fmt.format(r[m]), fmt.format(r[f"{m}_ci_low"]),
                    fmt.format(r[f"{m}_ci_high"])} <= shown, (r.perturbation, m)
    models = compare_models(store)
    for r in models.itertuples():
        assert {f"{r.mean_a:.4f}", f"{r.mean_b:.4f}", f"{r.difference:+.4f}",
                f"{r.ci_low:+.4f}", f"{r.ci_high:+.4f}"} <= shown


def test_off_a_terminal_without_columns_tables_take_80(audit):
    folder, _, args = audit
    text = _shown(args, folder, None)
    _whole(text, 80)


@pytest.fixture(scope="module")
def records(audit):
    """`reproduce list` reads a copy of the records with the longest verdicts ("direction
    reproduced" beside "undecided", "differs on other data"): every experiment is still
    listed, and evaluating all the committed records' claims (seconds, twice) would test
    the claims, not the table (tests/reproduce/test_committed_page.py does that)."""
    import shutil
    from pathlib import Path

    committed = Path(__file__).parents[2] / "docs" / "reproduction" / "records"
    for name in ("zhu2023-figure8", "shriver2018-table3.4"):
        shutil.copytree(committed / name, audit[0] / "records" / name)


@pytest.mark.parametrize("columns", [80, 100])
@pytest.mark.parametrize("command", [
    ["results", "w.duckdb"], ["results", "w.duckdb", "--summary"],
    ["slices", "w.duckdb", "--by", "activity"], ["slices", "w.duckdb", "--by", "recency"],
    ["exposure", "w.duckdb"], ["changes", "w.duckdb", "--worst", "3"],
    ["status", "w.duckdb"], ["models", "list"], ["datasets", "list"],
    ["perturbations", "list"], ["reproduce", "list", "--records", "records"]],
    ids=lambda c: " ".join(c[:2]) if c[0] == "reproduce" else " ".join(c))
def test_every_result_table_is_whole(audit, records, command, columns):
    folder, _, _ = audit
    _whole(_shown(command, folder, columns), columns)


def test_the_per_trial_table_shows_every_trial_whole(audit):
    folder, store, _ = audit
    text = _shown(["results", "w.duckdb"], folder, 80)
    from recaudit.audit import trial_summary

    shown = _numbers(text)
    for r in trial_summary(store).itertuples():
        assert {f"{r.rbo:.4f}", f"{r.jaccard:.4f}", f"{r.mrr_base:.4f}"} <= shown


def test_audit_csv_and_json_are_the_library_numbers(audit):
    folder, store, args = audit
    # round_trip: pandas' default parser may read a repr'd float one ulp off (pandas 2.2)
    got = pd.read_csv(io.StringIO(_shown([*args, "--format", "csv"], folder, 80)),
                      float_precision="round_trip")
    want = summary(store)
    assert got.columns.tolist() == want.columns.tolist()
    numeric = want.select_dtypes("number").columns
    pd.testing.assert_frame_equal(got[numeric], want[numeric], check_exact=True,
                                  check_dtype=False)
    data = json.loads(_shown([*args, "--format", "json"], folder, 80))
    assert set(data) == {"summary", "models", "reading"}
    for row, (_, w) in zip(data["summary"], want.iterrows(), strict=True):
        for col in numeric:
            assert (row[col] is None and w[col] != w[col]) or row[col] == w[col], col


def test_who_csv_and_json_are_the_library_numbers(audit):
    folder, store, _ = audit
    got = pd.read_csv(io.StringIO(_shown(["slices", "w.duckdb", "--by", "activity", "-f",
                                          "csv"], folder, 80)), float_precision="round_trip")
    pd.testing.assert_frame_equal(got[["rbo", "rbo_ci_low", "p_vs_rest"]],
                                  slices(store, "activity")[["rbo", "rbo_ci_low",
                                                             "p_vs_rest"]], check_exact=True)
    rows = json.loads(_shown(["exposure", "w.duckdb", "-f", "json"], folder, 80))
    want = exposure(store).summary
    assert [r["gini_change"] for r in rows] == want.gini_change.tolist()
    rows = json.loads(_shown(["changes", "w.duckdb", "--worst", "2", "-f", "json"], folder,
                             80))
    assert [r["rbo"] for r in rows] == most_changed(store, 2).rbo.tolist()


def test_a_pipe_respects_columns():
    """The console script in a real pipe: ``COLUMNS=100`` gives lines up to 100, and the
    listing that needs more wraps instead of cutting."""
    entry = [sys.executable, "-m", "recaudit", "perturbations", "list"]
    for columns in (80, 100):
        done = subprocess.run(entry, env=environment({"COLUMNS": str(columns)}),
                              capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr
        _whole(done.stdout, columns)
        assert max(len(line) for line in done.stdout.splitlines()) > columns - 10
