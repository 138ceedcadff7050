"""Exported runs: readers (TREC as trec_eval orders it, CSV/Parquet, RecBole top-k) and
compare_runs / recaudit compare."""

from __future__ import annotations

import io
import json

import numpy as np
import pandas as pd
import pytest
from scipy import stats

import recaudit
from recaudit import metrics as M
from recaudit.cli import main
from recaudit.errors import DataError
from recaudit.runs import (Run, compare_many, compare_pairs, compare_runs, pairwise_matrix,
                           read_run, summarize)


def write(path, text):
    path.write_text(text)
    return path


# ---------------------------------------------------------------------------------- readers
def test_trec_order_is_trec_evals_not_the_rank_column(tmp_path):
    # trec_eval (form_res_rels.c, comp_sim_docno) ignores the rank column, sorts by score
    # descending as a C float, then by docid in descending strcmp order.
    from recaudit.errors import RecauditWarning

    with pytest.warns(RecauditWarning) as w:
        run = _trec_run(tmp_path)
    assert run.lists()["q1"].tolist() == ["d9", "d10", "b", "a", "d1"]
    assert run.lists()["7"].tolist() == ["x"]
    assert len(w) == 1 and "1 queries have tied scores and 1 a rank column that disagrees" \
        in str(w[0].message)


def _trec_run(tmp_path):
    return read_run(write(tmp_path / "r.txt", "\n".join([
        "q1 Q0 d1 1 0.5 t",        # ranks claim d1 first: ignored
        "q1 Q0 d9 2 2.0 t",
        "q1 Q0 d10 3 2.0 t",       # tie with d9: "d9" > "d10" byte-wise, so d9 first
        "q1 Q0 a 4 1.00000001 t",  # equals 1.0 as a float32: ties with b, then "b" > "a"
        "q1 Q0 b 5 1.0 t",
        "",
        "7 Q0 x 1 -1 t",
    ])))


def test_csv_parquet_and_recbole_files_read_the_same_lists(tmp_path):
    expect = {"1": ["i3", "i1", "i2"], "2": ["i2", "i9"]}
    write(tmp_path / "rank.csv", "user,item,rank\n1,i1,2\n2,i9,7\n1,i3,1\n1,i2,3\n2,i2,5\n")
    write(tmp_path / "score.tsv", "query\titem\tscore\n1\ti2\t0.1\n1\ti1\t0.5\n1\ti3\t0.5\n"
                                  "2\ti9\t0\n2\ti2\t3\n")
    pd.DataFrame({"query": [1, 1, 1, 2, 2], "item": ["i3", "i1", "i2", "i2", "i9"],
                  "rank": [0, 1, 2, 0, 1]}).to_parquet(tmp_path / "r.parquet")
    write(tmp_path / "top.recbole", "user_id:token\titem_id_list:token_seq\n"
                                    "1\ti3 i1 i2\n2\ti2 i9\n")
    for name in ("rank.csv", "r.parquet", "top.recbole"):
        got = {q: v.tolist() for q, v in read_run(tmp_path / name).lists().items()}
        assert got == expect, name
    by_score = {q: v.tolist() for q, v in read_run(tmp_path / "score.tsv").lists().items()}
    assert by_score == {"1": ["i1", "i3", "i2"], "2": ["i2", "i9"]}  # ties by id ascending


@pytest.mark.parametrize("name, text, message", [
    ("bad.trec", "q Q0 d 1 1.0 t\nq Q0 e 2 t\n", r"line 2: expected 6 fields"),
    ("bad2.trec", "q Q0 d 1 1.0 t\nq Q0 d 2 0.5 t\n", r"query q lists item 'd' twice "
                                                      r"\(line 1 and line 2\)"),
    ("bad.csv", "query,item,rank\n1,a,1\n1,b,1\n", r"query 1 has rank 1 twice \(line 2 and "
                                                   r"line 3\)"),
    ("nocol.csv", "query,movie,rank\n1,a,1\n", r"no item column"),
    ("noorder.csv", "query,item\n1,a\n", r"no rank or score column"),
    ("badrank.csv", "query,item,rank\n1,a,1\n1,b,two\n", r"line 3, column 'rank': rank 'two'"),
    ("bad.recbole", "user_id:token\titem_id:token\n1\ta\n", r"line 1: RecBole header"),
    ("dup.recbole", "user_id:token\titem_id_list:token_seq\n1\ta b a\n",
     r"line 2: user '1' lists item 'a' twice"),
])
def test_bad_run_files_name_file_and_line(tmp_path, name, text, message):
    path = write(tmp_path / name, text)
    with pytest.raises(DataError, match=message) as err:
        read_run(path)
    assert str(path) in str(err.value)


# ---------------------------------------------------------------------------------- compare
def test_per_query_values_equal_the_scalar_metrics():
    rng = np.random.default_rng(0)
    lists_a, lists_b = {}, {}
    for q in range(30):
        la, lb = int(rng.integers(3, 15)), int(rng.integers(3, 15))
        lists_a[q] = [f"i{j}" for j in rng.permutation(25)[:la]]
        lists_b[q] = [f"i{j}" for j in rng.permutation(25)[:lb]]
    df = compare_runs(Run.from_lists(lists_a, "A"), Run.from_lists(lists_b, "B"), k=5, p=0.8)
    assert list(df.columns) == ["query", "rbo", "average_overlap", "frbo", "jaccard"]
    for row in df.itertuples():
        a, b = lists_a[int(row.query)], lists_b[int(row.query)]
        assert row.rbo == pytest.approx(M.rbo(a, b, p=0.8, variant="ext"), abs=1e-12)
        assert row.average_overlap == pytest.approx(M.average_overlap(a, b), abs=1e-12)
        assert row.jaccard == pytest.approx(len(set(a[:5]) & set(b[:5]))
                                            / len(set(a[:5]) | set(b[:5])), abs=1e-12)
        if min(len(a), len(b)) >= 5:
            assert row.frbo == pytest.approx(M.frbo(a, b, k=5, p=0.8), abs=1e-12)
        else:
            assert np.isnan(row.frbo)  # FRBO@k is undefined for a list shorter than k


def test_identical_and_disjoint_runs_closed_forms():
    a = Run.from_lists({1: list("abcdefghij"), 2: list("klmnopqrst")}, "a")
    b = Run.from_lists({1: list("ABCDEFGHIJ"), 2: list("KLMNOPQRST")}, "b")
    same = compare_runs(a, a, k=10)
    assert (same[["rbo", "average_overlap", "frbo", "jaccard"]].to_numpy() == 1.0).all()
    apart = compare_runs(a, b, k=10)
    assert (apart[["rbo", "average_overlap", "frbo", "jaccard"]].to_numpy() == 0.0).all()


def test_missing_queries_error_or_skip():
    a = Run.from_lists({1: ["x", "y"], 2: ["y", "x"], 3: ["x"]}, "a.trec")
    b = Run.from_lists({2: ["y", "x"], 1: ["x", "y"], 4: ["z"]}, "b.csv")
    with pytest.raises(DataError, match=r"1 queries appear only in a.trec and 1 only in b.csv"):
        compare_runs(a, b)
    df = compare_runs(a, b, missing="skip")
    assert df["query"].tolist() == ["1", "2"] and (df["rbo"] == 1.0).all()


def test_several_runs_pairwise_matrix_matches_pairs():
    rng = np.random.default_rng(1)
    runs = [Run.from_lists({q: list(rng.permutation(12)[:8]) for q in range(10)}, f"r{j}")
            for j in range(3)]
    long = compare_many(runs, k=5)
    assert len(long) == 3 * 10
    m = pairwise_matrix(long, "rbo")
    assert np.allclose(m.to_numpy(), m.to_numpy().T) and (np.diag(m.to_numpy()) == 1).all()
    assert m.loc["r0", "r2"] == pytest.approx(compare_runs(runs[0], runs[2], k=5)["rbo"].mean())


def test_top_level_api_reads_paths(tmp_path):
    write(tmp_path / "a.trec", "1 Q0 x 1 2 t\n1 Q0 y 2 1 t\n")
    write(tmp_path / "b.csv", "query,item,score\n1,y,5\n1,x,4\n")
    df = recaudit.compare_runs(tmp_path / "a.trec", tmp_path / "b.csv", k=2)
    assert df["jaccard"].tolist() == [1.0] and df["rbo"].iloc[0] < 1


# ---------------------------------------------------------------------------------- decisions
def _lists(rng, n_queries, swaps):
    """A reference run and runs with ``swaps[j]`` random adjacent swaps per query."""
    base = {str(q): [f"i{j}" for j in rng.permutation(30)[:10]] for q in range(n_queries)}
    runs = [Run.from_lists(base, name="ref")]
    for j, n in enumerate(swaps):
        lists = {}
        for q, items in base.items():
            items = list(items)
            for _ in range(n):
                t = int(rng.integers(0, 9))
                items[t], items[t + 1] = items[t + 1], items[t]
            lists[q] = items
        runs.append(Run.from_lists(lists, name=f"r{j}"))
    return runs


def test_summary_interval_covers_the_mean_and_tests_identity():
    rng = np.random.default_rng(4)
    ref, near = _lists(rng, 60, [1])
    row = summarize(compare_runs(ref, near, k=5)).iloc[0]
    per_query = compare_runs(ref, near, k=5)["rbo"]
    assert row.rbo_ci_low < row.rbo < row.rbo_ci_high <= 1
    half = stats.t.ppf(0.975, len(per_query) - 1) * per_query.std(ddof=1) / np.sqrt(60)
    assert row.rbo_ci_high - row.rbo_ci_low == pytest.approx(2 * half, rel=1e-9) or \
        row.rbo_ci_high == 1.0
    assert row.rbo_p_identical < 1e-6  # one swap per query always moves RBO below 1
    same = summarize(compare_runs(ref, ref, k=5)).iloc[0]
    assert (same.rbo, same.rbo_ci_low, same.rbo_ci_high, same.rbo_p_identical) == (1, 1, 1, 1)


def test_compare_pairs_finds_the_closer_run_and_applies_holm():
    rng = np.random.default_rng(5)
    runs = _lists(rng, 80, [0, 1, 6])
    out = compare_pairs(compare_many(runs, k=5), "rbo")
    assert len(out) == 3 and set(out.reference) == {"ref"}
    row = out[(out.run_b == "r0") & (out.run_c == "r2")].iloc[0]
    assert row.difference > 0 and row.ci_low > 0 and row.p < 1e-6
    ab = compare_runs(runs[0], runs[1], k=5)["rbo"] - compare_runs(runs[0], runs[3], k=5)["rbo"]
    assert row.difference == pytest.approx(ab.mean())
    raw = []
    for (i, j), used in zip(((1, 2), (1, 3), (2, 3)), out.test):
        d = (compare_runs(runs[0], runs[i], k=5)["rbo"]
             - compare_runs(runs[0], runs[j], k=5)["rbo"]).to_numpy()
        assert used in ("paired-t", "wilcoxon")
        raw.append(stats.ttest_1samp(d, 0).pvalue if used == "paired-t"
                   else stats.wilcoxon(d).pvalue)
    order = np.argsort(raw)
    holm = np.maximum.accumulate(np.minimum(1, np.array(raw)[order] * [3, 2, 1]))
    assert out.p.to_numpy()[order] == pytest.approx(holm, rel=1e-9)


# ---------------------------------------------------------------------------------- CLI
def test_cli_compare_two_runs_and_output(tmp_path, capsys):
    write(tmp_path / "a.trec", "".join(f"{q} Q0 d{j} {j} {10 - j} t\n" for q in (1, 2)
                                       for j in range(1, 11)))
    write(tmp_path / "b.csv", "query,item,rank\n" + "".join(
        f"{q},d{(j % 10) + 1},{j}\n" for q in (1, 2) for j in range(1, 11)))
    out = tmp_path / "rows.csv"
    assert main(["compare", str(tmp_path / "a.trec"), str(tmp_path / "b.csv"), "--k", "5",
                 "--output", str(out)]) == 0
    text = capsys.readouterr().out
    assert "RBO (ext)" in text and "FRBO@5" in text and "Jaccard@5" in text
    assert "95 % interval" in text and "(identical)" in text
    assert "a.trec vs b.csv" in text  # two formats: the extensions tell them apart
    rows = pd.read_csv(out)
    assert list(rows.columns) == ["query", "rbo", "average_overlap", "frbo", "jaccard"]
    assert len(rows) == 2 and rows["jaccard"].iloc[0] == pytest.approx(4 / 6)


def test_cli_compare_three_runs_prints_matrices(tmp_path, capsys):
    for name, order in (("a.csv", "xyz"), ("b.csv", "yxz"), ("c.csv", "zyx")):
        write(tmp_path / name, "query,item,rank\n" + "".join(
            f"1,{it},{r}\n" for r, it in enumerate(order, start=1)))
    assert main(["compare", *(str(tmp_path / n) for n in ("a.csv", "b.csv", "c.csv")),
                 "--k", "2"]) == 0
    text = capsys.readouterr().out
    assert "mean RBO (ext)" in text and "mean Jaccard@2" in text
    assert [line.split() for line in text.splitlines()[1:2]] == [["a", "b", "c"]]
    assert "closer to one run than to another" in text


def test_runs_are_labelled_by_the_short_part_of_their_paths():
    """Issue 47, item 9: the folders and ends all paths share are dropped, so three runs of
    one export read seed-0/baseline, seed-0/seed-only, seed-1/baseline (not paths cut to
    '…gru4rec_epochs=2/se…')."""
    from recaudit.runs import short_labels

    root = "out/rank-lists/synthetic/gru4rec_epochs=2"
    assert short_labels([f"{root}/seed-0/baseline.csv", f"{root}/seed-0/seed-only.csv",
                         f"{root}/seed-1/baseline.csv"]) == [
        "seed-0/baseline", "seed-0/seed-only", "seed-1/baseline"]
    # a shared end is dropped too when what is left still tells the runs apart
    assert short_labels([f"{root}/seed-0/baseline.csv", f"{root}/seed-1/baseline.csv"]) == [
        "seed-0", "seed-1"]
    assert short_labels(["a.trec", "b.csv"]) == ["a.trec", "b.csv"]  # no shared extension
    assert short_labels(["runs/x.csv", "runs/x.csv"]) == ["runs/x.csv", "runs/x.csv (2)"]
    assert short_labels(["a/run.csv", "b/c/run.csv"]) == ["a", "b/c"]
    assert short_labels(["/abs/one.trec", "/abs/two.trec"]) == ["one", "two"]


def test_cli_compare_labels_runs_as_told_and_prints_csv_and_json(tmp_path, capsys):
    for folder, order in (("seed-0", "xyz"), ("seed-1", "yxz")):
        (tmp_path / folder).mkdir()
        for name in ("baseline", "seed-only"):
            write(tmp_path / folder / f"{name}.csv", "query,item,rank\n" + "".join(
                f"{q},{it},{r}\n" for q in (1, 2, 3)
                for r, it in enumerate(order if name == "baseline" else order[::-1], 1)))
    runs = [str(tmp_path / "seed-0" / "baseline.csv"), str(tmp_path / "seed-0" / "seed-only.csv"),
            str(tmp_path / "seed-1" / "baseline.csv")]
    assert main(["compare", *runs, "--k", "2"]) == 0
    text = capsys.readouterr().out
    assert "seed-0/baseline" in text and "seed-0/seed-only" in text and "…" not in text
    assert main(["compare", *runs, "--k", "2", "--label", "base", "--label", "floor",
                 "--label", "base 1", "--format", "json"]) == 0
    got = json.loads(capsys.readouterr().out)
    want = summarize(compare_many(runs, k=2, labels=["base", "floor", "base 1"]))
    assert [(r["run_a"], r["run_b"]) for r in got["summary"]] == [
        ("base", "floor"), ("base", "base 1"), ("floor", "base 1")]
    for row, (_, w) in zip(got["summary"], want.iterrows(), strict=True):
        assert row["rbo"] == w["rbo"] and row["jaccard_ci_low"] == w["jaccard_ci_low"]
    assert {r["run_b"] for r in got["pairs"]} == {"floor"}
    assert main(["compare", *runs[:2], "--k", "2", "--format", "csv"]) == 0
    frame = pd.read_csv(io.StringIO(capsys.readouterr().out))
    assert frame.rbo.tolist() == summarize(compare_many(runs[:2], k=2)).rbo.tolist()
    assert main(["compare", *runs, "--label", "one"]) == 2
    assert "1 labels for 3 runs" in capsys.readouterr().err
    assert main(["compare", *runs[:2], "--label", "x", "--label", "x"]) == 2
    assert "given to two runs" in capsys.readouterr().err
    assert main(["compare", *runs[:2], "--format", "trec"]) == 2
    assert "--run-format" in capsys.readouterr().err


def test_cli_compare_errors_exit_2(tmp_path, capsys):
    write(tmp_path / "a.trec", "1 Q0 x 1 2 t\n2 Q0 x 1 2 t\n")
    write(tmp_path / "b.trec", "1 Q0 x 1 2 t\n")
    assert main(["compare", str(tmp_path / "a.trec"), str(tmp_path / "b.trec")]) == 2
    assert "--missing skip" in capsys.readouterr().err
    assert main(["compare", str(tmp_path / "a.trec"), str(tmp_path / "b.trec"),
                 "--missing", "skip"]) == 0
    assert "warning: skipped 1 queries present in one run only (1 only in a.trec, 0 only " \
           "in b.trec); compared the 1 shared" in capsys.readouterr().err
    assert main(["compare", str(tmp_path / "a.trec"), str(tmp_path / "nope.csv")]) == 2
    assert "nope.csv: no such file" in capsys.readouterr().err
    assert main(["compare", str(tmp_path / "a.trec"), str(tmp_path / "b.trec"), "--p", "1.5"]) == 2
