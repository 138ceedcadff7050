"""What the ``recaudit`` command imports when it has little to do (issues 47 and 50): reading a
store, ``--help`` and an argument error import no torch; ``status``, ``--help`` and the
argument errors neither numba nor scipy.stats. An argument (a perturbation, ``--k``, a model,
its parameters, a dataset) is checked before what would run the audit is imported.

Each command runs through :func:`recaudit.cli.main`, as the console script runs it, in a
fresh interpreter of its own: ``sys.modules`` is the process's, so one check per process. How
fast the commands answer is measured by ``benchmarks/bench_startup.py``, not asserted here.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from ._entry import environment

#: What a command that reads a store or refuses its arguments has no use for.
HEAVY = ("torch", "numba", "scipy.stats")


def _run(args: list[str], cwd: Path) -> tuple[int, list[str], str]:
    """``recaudit ARGS`` through ``recaudit.cli.main`` in a fresh interpreter: its exit code,
    the modules of :data:`HEAVY` it imported, and what it wrote to stderr."""
    code = textwrap.dedent(f"""
        import contextlib, io, json, sys
        from recaudit.cli import main
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main({args!r})
        print(json.dumps([code, [m for m in {HEAVY!r} if m in sys.modules], err.getvalue()]))
    """)
    proc = subprocess.run([sys.executable, "-c", code], cwd=cwd, env=environment(),
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    exit_code, heavy, err = json.loads(proc.stdout.strip().splitlines()[-1])
    return exit_code, heavy, err


@pytest.mark.parametrize("args, none_of", [
    (["status"], HEAVY),
    (["results"], ("torch",)),
    (["results", "--summary"], ("torch",)),
    (["slices", "--by", "activity"], ("torch",)),
    (["exposure"], ("torch",)),
], ids=["status", "results", "results-summary", "slices", "exposure"])
def test_reading_a_store_of_a_torch_model_imports_no_torch(who_audit, args, none_of):
    command, *options = args
    code, heavy, err = _run([command, str(who_audit.store), *options], who_audit.store.parent)
    assert code == 0, err
    assert not set(heavy) & set(none_of), heavy


def test_help_imports_nothing_heavy(tmp_path):
    assert _run(["--help"], tmp_path)[:2] == (0, [])
    assert _run(["audit", "--help"], tmp_path)[:2] == (0, [])


@pytest.mark.parametrize("args, error", [
    (["-p", "random-delet"], "unknown perturbation 'random-delet'"),
    (["--k", "500"], "k = 500 exceeds the 300 items of dataset 'synthetic'"),
    (["--model", "gru4rek"], "unknown model 'gru4rek'"),
    (["--param", "hidden_dim=0"], "GRU4RecConfig.hidden_dim = 0: must be an integer >= 1"),
    (["--dataset", "synthetik"], "synthetik"),
], ids=["perturbation", "k", "model", "parameter", "dataset"])
def test_an_argument_error_is_found_before_anything_heavy_is_imported(tmp_path, args, error):
    options = {"--dataset": "synthetic", "--model": "gru4rec",
               **dict(zip(args[::2], args[1::2], strict=True))}
    argv = ["audit", *(x for option in options.items() for x in option),
            "-o", str(tmp_path / "out.duckdb")]
    code, heavy, err = _run(argv, tmp_path)
    assert code == 2 and error in err, err
    assert heavy == []
    assert not (tmp_path / "out.duckdb").exists()
