"""``recaudit slices | changes | exposure`` through the real entry point, on an audit the command
line ran: what they print is what the library computes, in every format."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys

import pandas as pd
import pytest

from recaudit.audit import changes, exposure, most_changed, slices
from recaudit.cli import main
from tests._who_audit import write_log


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    folder = tmp_path_factory.mktemp("who-cli")
    write_log(folder / "log.csv")
    out = folder / "a.duckdb"
    assert main(["audit", "--dataset", str(folder / "log.csv"), "--seeds", "2",
                 "-p", "casper-delete", "-p", "seed-only", "--min-interactions", "0",
                 "--k", "5", "--param", "epochs=1", "--param", "embedding_dim=8",
                 "--param", "hidden_dim=8", "--output", str(out)]) == 0
    return out


def _run(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "COLUMNS": "200"}
    return subprocess.run([sys.executable, "-m", "recaudit.cli", *args], capture_output=True,
                          text=True, env=env, timeout=300)


def _out(capsys, *args: str) -> str:
    assert main(list(args)) == 0
    return capsys.readouterr().out


def test_slices_csv_and_json_are_the_library_frame(store, capsys):
    want = slices(store, "popularity", bins=3)
    done = _run("slices", str(store), "--by", "popularity", "--bins", "3", "--format", "csv")
    assert done.returncode == 0, done.stderr
    got = pd.read_csv(io.StringIO(done.stdout))
    assert got.columns.tolist() == want.columns.tolist()
    assert {"perturbation", "slice", "users", "queries", "rbo", "rbo_ci_low", "rbo_ci_high",
            "jaccard", "jaccard_ci_low", "jaccard_ci_high", "frbo", "frbo_ci_low",
            "frbo_ci_high"} <= set(got.columns)
    pd.testing.assert_frame_equal(got[["rbo", "jaccard", "users", "queries"]],
                                  want[["rbo", "jaccard", "users", "queries"]])
    rows = json.loads(_out(capsys, "slices", str(store), "--by", "activity", "-f", "json"))
    assert [r["slice"] for r in rows] == slices(store, "activity").slice.tolist()


def test_slices_table_shows_every_slice(store, capsys):
    text = _out(capsys, "slices", str(store), "--by", "activity", "--edges", "15,25")
    for label in slices(store, "activity", edges=[15, 25]).slice.unique():
        assert label in text
    lines = text.splitlines()
    rule = next(i for i, line in enumerate(lines) if line.startswith("───"))
    header = [line.split() for line in lines[rule - 2:rule]]  # two lines above the rule
    assert header[0][-4:] == ["p", "vs", "p", "vs"] and header[1][-2:] == ["seed-only", "rest"]


def test_changes_json_keys_and_lists(store):
    user = most_changed(store, 1).user.iloc[0]
    done = _run("changes", str(store), "--user", user, "--perturbation", "seed-only",
                "--seed", "1", "--format", "json")
    assert done.returncode == 0, done.stderr
    got = json.loads(done.stdout)
    want = changes(store, user, perturbation="seed-only", seed=1)
    assert len(got) == len(want) >= 1
    for g, w in zip(got, want, strict=True):
        assert {"user", "perturbation", "seed", "baseline", "perturbed", "entered",
                "left"} <= set(g)
        assert (g["user"], g["perturbation"], g["seed"]) == (user, "seed-only", 1)
        assert g["baseline"] == list(w.baseline) and g["entered"] == list(w.entered)


def test_changes_table_and_worst(store, capsys):
    user = most_changed(store, 1, perturbation="seed-only").user.iloc[0]
    text = " ".join(_out(capsys, "changes", str(store), "--user", user, "-p",
                         "seed-only").split())  # prose wraps at the console's width
    c = changes(store, user, perturbation="seed-only")[0]
    assert f"user {user} · seed-only · seed 0" in text
    assert all(i in text for i in c.baseline + c.perturbed)
    assert "edit: none" in text
    text = " ".join(_out(capsys, "changes", str(store), "--user", user, "-p",
                         "casper-delete").split())
    assert "edit: deleted" in text and "in the interaction graph it reaches" in text
    worst = pd.read_csv(io.StringIO(_out(capsys, "changes", str(store), "--worst", "2",
                                         "-f", "csv")))
    assert worst.user.tolist() == most_changed(store, 2).user.tolist()
    assert {"activity", "popularity", "accuracy", "recency"} <= set(worst.columns)


def test_exposure_formats(store, capsys):
    result = exposure(store)
    summary = pd.read_csv(io.StringIO(_out(capsys, "exposure", str(store), "-f", "csv")))
    assert summary.gini_change.tolist() == pytest.approx(result.summary.gini_change.tolist())
    items = json.loads(_out(capsys, "exposure", str(store), "--items", "--top", "0",
                            "-f", "json"))
    assert len(items) == len(result.items)
    text = _out(capsys, "exposure", str(store), "--top", "2")
    assert "item exposure" in text and "Gini" in text
    top = result.items[result.items.perturbation == "seed-only"].item.head(2)
    assert all(str(i) in text for i in top)


@pytest.mark.parametrize(("args", "message"), [
    (["slices", "{s}", "--by", "actvity"], "Did you mean 'activity'"),
    (["slices", "{s}", "--by", "activity", "--edges", "a,b"], "--edges"),
    (["slices", "{s}", "--by", "activity", "-f", "xml"], "--format must be"),
    (["changes", "{s}"], "either --user"),
    (["changes", "{s}", "--user", "nobody"], "no user 'nobody'"),
    (["changes", "{s}", "--user", "u10", "-f", "csv"], "--format must be table or json"),
    (["exposure", "{s}x"], "no results store"),
])
def test_mistakes_are_one_line_errors(store, capsys, args, message):
    assert main([a.format(s=store) for a in args]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and message in err and "Traceback" not in err


def test_data_names_a_moved_file_for_a_store_without_a_copy(store, tmp_path, capsys):
    """A store written before stores kept their data, its file moved away: `--data PATH`
    names it (checked against the trials' fingerprint); another file is a one-line error."""
    import shutil

    import duckdb

    old = tmp_path / "old.duckdb"
    shutil.copy(store, old)
    con = duckdb.connect(str(old))
    con.execute("DROP TABLE datasets")
    for tid, spec in con.execute("SELECT trial_id, spec FROM trials").fetchall():
        spec = json.loads(spec)
        spec["dataset"]["path"] = str(tmp_path / "gone" / "log.csv")  # where it was
        con.execute("UPDATE trials SET spec = ? WHERE trial_id = ?", [json.dumps(spec), tid])
    con.close()
    assert main(["exposure", str(old)]) == 2
    assert "name the file with --data PATH" in capsys.readouterr().err
    moved = tmp_path / "moved.csv"
    shutil.copy(store.parent / "log.csv", moved)
    want = exposure(store).summary.to_csv(index=False)
    assert main(["exposure", str(old), "--data", str(moved), "-f", "csv"]) == 0
    assert capsys.readouterr().out == want
    pd.read_csv(moved).iloc[2:].to_csv(tmp_path / "other.csv", index=False)
    assert main(["slices", str(old), "--by", "activity", "--data",
                 str(tmp_path / "other.csv")]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {tmp_path / 'other.csv'}: holds none of the data the "
                          "store's trials ran on"), err
