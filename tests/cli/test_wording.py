"""Issue 47, item 12: the smaller wording. Errors of flags read as the flags (``-p NAME``, not
``key 'perturbations[1]'``) with a full stop before "Did you mean"; the dry run's time in
words; "both" for two perturbations; ``recaudit --help`` lists each command with its first
sentence whole; a quick audit is named (and its report titled) by what it audits; ``-o`` into
a folder that does not exist says it made it."""

from __future__ import annotations

import re

import pandas as pd
import pytest

from ._entry import one_error, recaudit_here, tiny_log, with_model


@pytest.mark.parametrize(("args", "starts", "said"), [
    (["audit", "-p", "random-delte"], "error: -p random-delte: unknown perturbation",
     ". Did you mean 'random-delete'?"),
    (["audit", "-p", "seed-only", "-p", "fuzz:XX:3"], "error: -p fuzz:XX:3: ",
     "unknown fuzzing heuristic 'XX'"),
    (["audit", "--model", "gru4rc"], "error: --model gru4rc: unknown model 'gru4rc'",
     ". Did you mean 'gru4rec'?"),
    (["audit", "--param", "epochz=3"], "error: --param epochz=3: model 'gru4rec' has no "
     "parameter 'epochz'", ". Did you mean 'epochs'?"),
    (["audit", "--k", "5000"], "error: --k 5000: k = 5000 exceeds the 300 items", "(--k)"),
    (["audit", "--dataset", "synthtic"], "error: unknown dataset 'synthtic': neither a file",
     "nor synthetic (built in). Did you mean 'synthetic'?"),
    (["fuzz", "--model", "funksvdd"], "error: --model funksvdd: unknown model",
     ". Did you mean 'funksvd'?"),
    (["simulate", "mirror", "--mix", "2"], "error: --mix 2: ", "in [0, 1]"),
    (["schema", "audt"], "error: unknown configuration 'audt'",
     "mirror. Did you mean 'audit'?"),
    (["audt"], "error: No such command 'audt'.", "Did you mean 'audit'?"),
])
def test_flag_errors_name_the_flag(tmp_path, args, starts, said):
    dry = ["--dry-run"] if args[0] == "audit" else []  # nothing is trained either way
    line = one_error(recaudit_here(*args, *dry, cwd=tmp_path))
    assert line.startswith(starts) and said in line, line
    assert "key '" not in line
    assert line.count("Did you mean") <= 1
    assert not re.search(r"[\w)] Did you mean", line)  # a full stop (or ?) before it


def test_a_store_question_names_its_flag(tmp_path):
    tiny_log(tmp_path)
    assert recaudit_here("audit", "--dataset", "tiny.csv", "--model", with_model(tmp_path),
                         "--seeds", "1", "--k", "5", "-p", "random-delete", "-o", "s.duckdb",
                         cwd=tmp_path).returncode == 0
    line = one_error(recaudit_here("results", "s.duckdb", "--study", "audt", cwd=tmp_path))
    assert line.startswith("error: --study audt: unknown study 'audt'")
    assert "mirror. Did you mean 'audit'?" in line
    line = one_error(recaudit_here("slices", "s.duckdb", "--by", "actvity", cwd=tmp_path))
    assert "column:NAME. Did you mean 'activity'?" in line


def test_the_dry_run_says_its_time_in_words():
    from recaudit.cli._plan import wall_time

    assert [wall_time(h) for h in (0.0, 1 / 120, 0.2, 1.49, 1.5, 30.0, 100.0, float("nan"))] \
        == ["under a minute", "under a minute", "12 min", "89 min", "1.5 h", "30.0 h",
            "4.2 days", "–"]


def test_two_perturbations_are_both_or_neither():
    from recaudit.audit import reading

    def row(pert, rbo, p):
        return {"dataset": "d", "model": "m", "perturbation": pert, "rbo": rbo, "queries": 99,
                "p_vs_seed_only": p}

    more = pd.DataFrame([row("a", 0.5, 0.001), row("b", 0.6, 0.002), row("seed-only", 0.9,
                                                                          float("nan"))])
    (line,) = reading(more)
    assert "seed-only floor at RBO 0.9000: both perturbations are more destabilising" in line
    same = more.assign(p_vs_seed_only=[0.5, 0.6, float("nan")])
    (line,) = reading(same)
    assert "neither perturbation is told apart from it" in line
    three = pd.concat([more, pd.DataFrame([row("c", 0.4, 0.001)])], ignore_index=True)
    assert "all 3 perturbations are more destabilising" in reading(three)[0]


def test_the_command_list_keeps_each_first_sentence_whole(tmp_path):
    from recaudit.cli import app, short_help

    proc = recaudit_here("--help", cwd=tmp_path, env={"COLUMNS": "200"})
    assert proc.returncode == 0
    listed = " ".join(re.sub("[│╭╮╰╯─]", " ", proc.stdout).split())  # the panel's text
    lines = {line.split()[0]: " ".join(line.split()[1:]) for line in
             (re.sub("[│╭╮╰╯─]", " ", x) for x in proc.stdout.splitlines()) if line.split()}
    for info in app.registered_commands:
        first = short_help(info.callback.__doc__ or "")
        assert first.endswith((".", ")")) and "``" not in first
        assert first in listed, first
        if len(first) < 150:  # fits the panel's width: one line, not the docstring's lines
            assert lines[info.name] == first
    assert short_help("Do a thing: with\n    a wrapped ``line``. Then more.\n\nNext.") == \
        "Do a thing: with a wrapped `line`."


def test_a_quick_audit_is_named_by_what_it_audits(tmp_path):
    tiny_log(tmp_path)
    model = with_model(tmp_path)
    proc = recaudit_here("audit", "--dataset", "tiny.csv", "--model", model, "--label", "pop",
                         "--seeds", "1", "--k", "5", "-p", "random-delete", "-o",
                         "typo/deeper/q.duckdb", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    # the mistyped folder was made, and the command says so (on stderr, beside the tables)
    assert f"note: created the folder typo{'/'} for the store" in proc.stderr
    proc = recaudit_here("report", "typo/deeper/q.duckdb", "-o", "q.md", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "q.md").read_text().splitlines()[2] == \
        "# Stability audit: pop on tiny.csv"
    again = recaudit_here("audit", "--dataset", "tiny.csv", "--model", model, "--label",
                          "pop", "--seeds", "1", "--k", "5", "-p", "random-delete", "-o",
                          "typo/deeper/q.duckdb", cwd=tmp_path)
    assert "created the folder" not in again.stderr  # it exists now


def test_an_old_quick_audit_is_titled_by_what_it_holds(tmp_path):
    """Stores written before were all named "quick-audit": the report says what they hold."""
    import json

    import duckdb

    tiny_log(tmp_path)
    assert recaudit_here("audit", "--dataset", "tiny.csv", "--model", with_model(tmp_path),
                         "--label", "pop", "--seeds", "1", "--k", "5", "-p", "random-delete",
                         "-o", "old.duckdb", cwd=tmp_path).returncode == 0
    con = duckdb.connect(str(tmp_path / "old.duckdb"))
    cfg = json.loads(con.execute("SELECT value FROM meta WHERE key = 'config'").fetchone()[0])
    cfg["name"] = "quick-audit"
    con.execute("UPDATE meta SET value = ? WHERE key = 'config'", [json.dumps(cfg)])
    con.close()
    assert recaudit_here("report", "old.duckdb", "-o", "old.md", cwd=tmp_path).returncode == 0
    assert "# Stability audit: pop on tiny.csv" in (tmp_path / "old.md").read_text()


@pytest.mark.parametrize("args, says", [
    (["--margin", "0.01"], "--margin goes with --until-decided"),
    (["--max-seeds", "8", "--budget", "1h"], "--max-seeds and --budget go with --until-decided"),
    (["--max-draws", "8"], "--max-draws goes with --until-decided"),
    (["--detect", "0.01"], "--detect goes with --dry-run or --until-decided"),
    (["--like", "pilot.duckdb", "--until-decided"], "--like goes with --dry-run"),
    (["--until-decided", "--detect", "0.01", "--like", "p.duckdb"],
     "--like goes with --dry-run"),                # --detect: the futility alternative
    (["--like", "p.duckdb", "--detect", "0.01"], "--like and --detect go with --dry-run"),
    (["--futility", "off"], "--futility goes with --until-decided"),
])
def test_an_option_that_would_do_nothing_is_a_usage_error(tmp_path, args, says):
    # issue 60, item 6: before, each was silently ignored and the audit trained
    for command in (["audit", "-p", "random-delete", "-p", "seed-only"], ["run", "a.toml"]):
        (tmp_path / "a.toml").write_text('models = ["gru4rec"]\nperturbations = '
                                         '["random-delete", "seed-only"]\n')
        line = one_error(recaudit_here(*command, *args, cwd=tmp_path))
        assert says in line and "hint:" in line
    assert not list(tmp_path.glob("**/*.duckdb"))          # nothing was trained


def test_the_plan_of_a_run_until_decided_takes_its_options(tmp_path):
    # the dry run of --until-decided reads --max-seeds and --margin (and --detect): no error
    proc = recaudit_here("audit", "--sample-users", "60", "--param", "epochs=1", "-p",
                         "random-delete", "-p", "seed-only", "--until-decided", "--dry-run",
                         "--max-seeds", "8", "--margin", "0.01", "--detect", "0.01",
                         "-o", "p.duckdb", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "up to the cap of 8 seeds (--max-seeds)" in " ".join(proc.stdout.split())


def test_no_footnote_about_a_p_column_the_table_does_not_have(tmp_path):
    # issue 60, item 9: without a floor the summary has no p column, and its caption said
    # "p = paired test of RBO against the floor" all the same
    model = with_model(tmp_path)
    proc = recaudit_here("audit", "--model", model, "--sample-users", "40", "-p",
                         "random-delete", "--seeds", "1", "-o", "a.duckdb", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    text = " ".join(proc.stdout.split())
    assert "ΔMRR = perturbed − original" in text and "p = paired" not in text
    proc = recaudit_here("audit", "--model", model, "--sample-users", "40", "-p",
                         "random-delete", "-p", "seed-only", "--seeds", "1", "-o", "a.duckdb",
                         cwd=tmp_path)
    assert "p = paired test of RBO against the floor" in " ".join(proc.stdout.split())
