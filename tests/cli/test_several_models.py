"""Issue 47, item 2: ``--model a --model b`` audits every model named (never only the last),
and says which is more stable: a table under the main ones, a line of the reading, the
``models`` rows of ``--format json`` (the library's :func:`recaudit.audit.compare_models`,
number for number), and the report's table."""

from __future__ import annotations

import json

import pytest

from recaudit.audit import compare_models, summary

from ._entry import POP, one_error, recaudit_here, tiny_log

#: Two models of one module: popularity with a little noise, and with a lot.
MODELS = POP + '''

class Loud(Pop):
    def __init__(self, noise=50.0):
        super().__init__(noise)
'''


@pytest.fixture(scope="module")
def two_models(tmp_path_factory):
    folder = tmp_path_factory.mktemp("two")
    tiny_log(folder, users=40)
    (folder / "two.py").write_text(MODELS)
    args = ["audit", "--dataset", "tiny.csv", "--model", "two:Pop", "--model", "two:Loud",
            "--label", "quiet", "--label", "loud", "-p", "random-delete", "-p", "seed-only",
            "--seeds", "3", "--k", "5", "-o", "two.duckdb"]
    table = recaudit_here(*args, cwd=folder)
    assert table.returncode == 0, table.stderr
    as_json = recaudit_here(*args, "--format", "json", cwd=folder)  # resumed: nothing trained
    assert as_json.returncode == 0, as_json.stderr
    return folder, folder / "two.duckdb", table, as_json


def test_every_model_named_is_audited(two_models):
    _, store, table, _ = two_models
    assert sorted(set(summary(store).model)) == ["loud", "quiet"]
    assert table.stdout.count("Rank-list sensitivity") == 2


def test_the_command_says_which_model_is_more_stable(two_models):
    _, store, table, _ = two_models
    out = table.stdout
    assert "Which model is more stable? RBO on tiny.csv" in out
    assert "A = loud; B = quiet" in " ".join(out.split())  # the store's order
    frame = compare_models(store)
    seed_only = frame[frame.perturbation == "seed-only"].iloc[0]
    # another seed reshuffles the loud model's noise, far more than the quiet one's
    assert seed_only.more_stable == "quiet" and seed_only.p_holm < 0.05
    line = next(x for x in out.splitlines() if x.startswith("tiny.csv: "))
    assert "quiet is more stable than loud under" in line and "seed-only" in line


def test_json_carries_the_comparison_number_for_number(two_models):
    _, store, _, as_json = two_models
    got = json.loads(as_json.stdout)
    frame = compare_models(store)
    assert len(got["models"]) == len(frame) == 2
    for row, (_, want) in zip(got["models"], frame.iterrows(), strict=True):
        for col in ("mean_a", "mean_b", "difference", "ci_low", "ci_high", "p", "p_holm"):
            assert row[col] == want[col]  # exact: floats written in full
        assert (row["a"], row["b"], row["more_stable"]) == (want.a, want.b, want.more_stable)
    assert [r["model"] for r in got["summary"]] == list(summary(store).model)
    assert any(line.startswith("tiny.csv: ") for line in got["reading"])
    assert "results: " in as_json.stderr and "results: " not in as_json.stdout


def test_the_report_compares_the_models(two_models):
    folder, store, _, _ = two_models
    proc = recaudit_here("report", store.name, "-o", "two.md", cwd=folder)
    assert proc.returncode == 0, proc.stderr
    text = (folder / "two.md").read_text()
    assert "### Which model is more stable?" in text
    assert "| tiny.csv | seed-only | loud | quiet |" in text
    assert "# Stability audit: quiet and loud on tiny.csv" in text  # as given


def test_a_parameter_goes_to_every_model_or_to_the_one_named(tmp_path):
    tiny_log(tmp_path)
    (tmp_path / "two.py").write_text(MODELS)
    proc = recaudit_here("audit", "--dataset", "tiny.csv", "--model", "two:Pop", "--model",
                         "two:Loud", "--param", "two:Loud.noise=7", "-p", "random-delete",
                         "--seeds", "1", "--k", "5", "-o", "p.duckdb", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert sorted(set(summary(tmp_path / "p.duckdb").model)) == ["two:Loud(noise=7)", "two:Pop"]
    proc = recaudit_here("audit", "--dataset", "tiny.csv", "--model", "two:Pop", "--model",
                         "two:Loud", "--param", "noise=2", "-p", "random-delete",
                         "--seeds", "1", "--k", "5", "-o", "q.duckdb", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert sorted(set(summary(tmp_path / "q.duckdb").model)) == ["two:Loud(noise=2)",
                                                                  "two:Pop(noise=2)"]


@pytest.mark.parametrize(("args", "said"), [
    (["--model", "gru4rec", "--model", "gru4rec"], "error: --model gru4rec is given twice"),
    (["--model", "gru4rec", "--model", "sasrec", "--label", "one"],
     "error: 1 --label for 2 --model: give one --label per --model"),
    (["--model", "gru4rec", "--model", "sasrec", "--param", "sasrc.epochs=1"],
     "error: --param 'sasrc.epochs=1': 'sasrc' is not a --model of this audit. Did you mean "
     "'sasrec'?"),
    (["--model", "gru4rec", "--model", "sasrc"], "error: --model sasrc: unknown model 'sasrc'"),
])
def test_several_models_refused_before_anything_runs(tmp_path, args, said):
    proc = recaudit_here("audit", *args, "--dry-run", cwd=tmp_path)
    assert one_error(proc).startswith(said)
    assert not list(tmp_path.iterdir())  # nothing written
