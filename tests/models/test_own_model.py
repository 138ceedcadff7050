"""A model of one's own, named as ``package.module:Class`` in a config or on the command line
(no registration), through the ``recaudit`` entry point."""

import pytest

from recaudit.cli import main


def _docs_model() -> str:
    """The file ``mymodels.py`` that the how-to page "Audit your own model" writes (so the
    page's model cannot rot)."""
    from pathlib import Path

    text = (Path(__file__).parents[2] / "docs" / "howto" / "own-model.md").read_text()
    block = text.split("```{code-block} python\n:caption: mymodels.py\n", 1)[1]
    return block.split("\n```", 1)[0]


MODEL = _docs_model()


@pytest.fixture
def own_model(tmp_path, monkeypatch):
    (tmp_path / "mymodels.py").write_text(MODEL)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))  # worker processes import it too
    return "mymodels:NextPop"


def test_a_class_named_in_a_config_is_audited(own_model, tmp_path, capsys):
    cfg = tmp_path / "a.toml"
    cfg.write_text(f'seeds = 2\nperturbations = ["random-delete", "seed-only"]\n'
                   f'output = "{tmp_path / "a.duckdb"}"\n'
                   f'[[models]]\nname = "{own_model}"\nlabel = "next pop"\n'
                   'params = {noise = 0.5}\n[[datasets]]\nname = "synthetic"\n')
    assert main(["run", str(cfg)]) == 0
    out = capsys.readouterr().out
    assert "next pop on synthetic" in out


def test_on_the_command_line_and_in_models_check(own_model, tmp_path, capsys):
    assert main(["audit", "--model", own_model, "--seeds", "1", "-p", "rerun",
                 "--output", str(tmp_path / "b.duckdb")]) == 0
    assert "1.0000" in capsys.readouterr().out  # a deterministic class: rerun gives RBO 1
    assert main(["models", "check", own_model]) == 0  # the page's model passes every check
    assert "determinism" in capsys.readouterr().out.lower()


def test_bad_targets_are_named(tmp_path, capsys):
    assert main(["audit", "--model", "no_such_module_xyz:Model", "--output",
                 str(tmp_path / "c.duckdb")]) == 2
    assert "cannot import module 'no_such_module_xyz'" in capsys.readouterr().err
    assert main(["audit", "--model", "json:JSONDecoder", "--output",
                 str(tmp_path / "c.duckdb")]) == 2
    assert "has no fit or rank method" in capsys.readouterr().err
    assert not (tmp_path / "c.duckdb").exists()


def test_the_recaudit_command_finds_a_model_in_the_working_folder(tmp_path):
    """``recaudit`` imports ``module:Class`` from the folder it runs in, as ``python -m`` does:
    no PYTHONPATH needed (the console script, in a process of its own)."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    (tmp_path / "mymodels.py").write_text(MODEL)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run([str(Path(sys.executable).parent / "recaudit"), "models", "list",
                           "mymodels:NextPop"], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "follow" in done.stdout  # the constructor's parameter, read from the class
