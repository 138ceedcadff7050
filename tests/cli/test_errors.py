"""Whatever a user can get wrong on the command line, in a TOML file or in a data file ends as
one line ``error: ...`` on stderr and exit code 2 -- never a traceback.

Runs in the dependency-floor job too (``make floors``), so it also checks the usage errors of
the oldest supported typer/click.
"""

import subprocess
import sys

import pytest

from recaudit.cli import main

from .conftest import TINY



@pytest.fixture
def files(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    once = tmp_path / "once.csv"  # no user has two interactions
    once.write_text("user,item,timestamp\n" + "".join(f"u{i},i{i % 5},{i}\n" for i in range(40)))
    (tmp_path / "onecol.csv").write_text("user\n1\n2\n3\n")
    (tmp_path / "norating.csv").write_text(
        "user,item,timestamp\n" + "".join(f"u{i % 4},i{i},{i}\n" for i in range(40)))
    (tmp_path / "notastore.duckdb").write_text("not a database")
    good = TINY.format(out=tmp_path / "s.duckdb")
    tomls = {
        "invalid": "seeds = [0,\n",
        "unknown": good.replace("seeds = [0]", "seedz = [0]"),
        "param": good.replace("epochs = 1", "epoch = 1"),
        "device": good + '\n[executor]\nkind = "process"\nworkers = 2\ndevices = ["gpu0"]\n',
        "pert": good.replace('"random-delete"', '"random-delet"'),
        "single": good.replace('name = "synthetic"\noptions = { n_users = 30, n_items = 20, '
                               'n_clusters = 3, mean_length = 12, seed = 1 }',
                               f'name = "once"\npath = "{once}"\nmin_user_interactions = 0'),
    }
    for name, text in tomls.items():
        (tmp_path / f"{name}.toml").write_text(text)
    return tmp_path


CASES = [
    # command-line usage (typer's own click)
    (["nosuchcmd"], "No such command 'nosuchcmd'"),
    (["audti"], "Did you mean 'audit'"),
    (["simulate", "nosuch"], "No such command"),
    (["audit", "--nosuchflag"], "--nosuchflag"),
    (["audit", "--seeds", "zero"], "'--seeds'"),
    (["audit", "--k", "0"], "'--k'"),
    (["audit", "--workers", "0"], "'--workers'"),
    (["properties", "--k", "-1"], "'--k'"),
    (["simulate", "mirror", "--epochs", "0"], "'--epochs'"),
    (["run"], "Missing argument"),
    # options the library validates
    (["simulate", "mirror", "--scenario", "nope"], "scenario"),
    (["simulate", "mirror", "--mix", "0,2"], "mix ratio"),
    (["simulate", "mirror", "--seeds", "x"], "--seeds"),
    (["audit", "--model", "gru4rc"], "Did you mean 'gru4rec'"),
    (["audit", "--param", "epoch=2"], "Did you mean 'epochs'"),
    (["audit", "--param", "epochs=zero"], "expected an integer"),
    (["audit", "--param", "epochs"], "KEY=VALUE"),
    (["audit", "-p", "random-delet"], "Did you mean 'random-delete'"),
    (["audit", "-p", "nofamily:x"], "unknown perturbation family 'nofamily:'"),
    (["audit", "--p", "1.5"], "metrics.p"),
    (["results", "s.duckdb", "--format", "xml"], "--format"),
    (["fuzz", "--heuristics", "AMRR", "--dataset", "norating.csv"], "Did you mean 'AMR'"),
    (["fuzz", "--sizes", "a,b"], "--sizes must be integers"),
    (["properties", "--models", "slope-two"], "unknown model 'slope-two'"),
    (["models", "list", "grurec"], "gru4rec"),
    (["report", "s.duckdb", "--format", "pdf"], "--format"),
    # files and data
    (["run", "missing.toml"], "cannot read config"),
    (["run", "invalid.toml"], "invalid TOML"),
    (["run", "unknown.toml"], "Did you mean 'seeds'"),
    (["run", "param.toml"], "line 13, key 'models[0].params.epoch'"),
    (["run", "device.toml"], "device must be"),
    (["run", "pert.toml"], "perturbations[1]"),
    (["run", "single.toml"], "no user with two training interactions"),
    (["audit", "--dataset", "once.csv", "--seeds", "1"], "no interaction is left after filtering"),
    (["audit", "--dataset", "missing.csv"], "no such file"),
    (["audit", "--dataset", "onecol.csv", "--seeds", "1"], "onecol.csv"),
    (["audit", "--dataset", "no-such-dataset"], "unknown dataset"),
    (["fuzz", "--dataset", "norating.csv", "--sets", "1"], "rating"),
    (["datasets", "info", "no-such-dataset"], "unknown dataset"),
    (["results", "nope.duckdb"], "no results store"),
    (["status", "notastore.duckdb"], "notastore.duckdb"),
    (["report", "nope.duckdb"], "no results store"),
]


@pytest.mark.parametrize("argv,needle", CASES, ids=[" ".join(a) for a, _ in CASES])
def test_bad_input_is_one_clean_line_and_exit_2(files, capsys, argv, needle):
    assert main(argv) == 2
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    assert needle in lines[0] and "Traceback" not in err


def test_the_installed_entry_point_exits_2_with_one_line(tmp_path):
    for argv in (["nosuchcmd"], ["audit", "--nosuchflag"]):
        proc = subprocess.run([sys.executable, "-m", "recaudit.cli", *argv], cwd=tmp_path,
                              capture_output=True, text=True, timeout=300)
        assert proc.returncode == 2, proc.stderr
        assert proc.stderr.count("\n") == 1 and proc.stderr.startswith("error: ")


def test_help_and_no_arguments_exit_0(capsys):
    assert main([]) == 0
    assert "Usage" in capsys.readouterr().out
    assert main(["audit", "--help"]) == 0
    assert "--perturbation" in capsys.readouterr().out


def test_debug_shows_the_usage_error(capsys):
    with pytest.raises(Exception) as err:
        main(["--debug", "audit", "--nosuchflag"])
    assert "nosuchflag" in str(err.value)


def test_soft_problems_are_one_warning_line(files, capsys):
    import os

    workers = str((os.cpu_count() or 1) + 1)
    # the warning comes when the executor is configured; the audit then fails: no such dataset
    assert main(["audit", "--workers", workers, "--dataset", "no-such-dataset"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[0].startswith("warning: executor:") and "exceed this machine" in err[0]
    assert err[1].startswith("error: ") and len(err) == 2
