"""Output sent to a pipe or a file is not cut to 80 columns (nor to ``COLUMNS``): every number
of a table reaches the log whole."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ENTRY = [sys.executable, "-c", "import sys; from recaudit.cli import _entry; sys.exit(_entry())"]


def _piped(args: list[str], cwd: Path) -> str:
    env = {**os.environ, "COLUMNS": "80"}  # what a CI log or a narrow default would impose
    done = subprocess.run(ENTRY + args, cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.parametrize("args", [["models", "list"], ["datasets", "list"],
                                  ["reproduce", "list"]], ids=lambda a: " ".join(a))
def test_listing_commands_are_not_cut_off_a_terminal(args, tmp_path):
    out = _piped(args, tmp_path)
    assert "…" not in out
    assert max(len(line) for line in out.splitlines()) > 80  # the tables' natural width


def test_audit_table_keeps_every_interval_whole_in_a_pipe(tmp_path):
    out = _piped(["audit", "--dataset", "synthetic", "--model", "gru4rec", "--param", "epochs=1",
                  "--param", "embedding_dim=8", "--param", "hidden_dim=8", "-p", "random-delete",
                  "-p", "seed-only", "-p", "rerun", "--seeds", "2", "-o", str(tmp_path / "a.duckdb")], tmp_path)
    rows = [line for line in out.splitlines() if line.startswith("│")]
    assert rows and "…" not in out
    # every interval cell is whole: "[low, high]" with both numbers
    assert all(line.count("[") == line.count("]") for line in rows)
    assert "p vs seed-only" in out
