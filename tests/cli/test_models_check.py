"""``recaudit models check``: the conformance kit as a pass/fail table with an exit code."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

import numpy as np

from recaudit.cli import main
from recaudit.data import RankLists
from recaudit.models.testing import CHECKS, run_conformance

SCRIPT = shlex.quote(str(Path(__file__).parents[1] / "models" / "fake_command_model.py"))
PY = shlex.quote(sys.executable)


def command_params(train_mode: str = "") -> list[str]:
    return ["--param", f"train={PY} {SCRIPT} train {{train}} {{seed}} {{model_dir}} {{params}} "
                       f"{train_mode}".strip(),
            "--param", f"rank={PY} {SCRIPT} rank {{model_dir}} {{queries}} {{k}} {{output}}"]


def test_deterministic_command_model_passes_the_checks_the_unseeded_one_fails(capsys):
    """The command model's parameters through the CLI; the whole kit on this program is
    tests/models/test_command_model.py's conformance class, and the whole table is the
    closed-form model's below (each program start costs a process: the kit twice was 11 s)."""
    assert main(["models", "check", "command", *command_params(), "--only", "determinism",
                 "--only", "shapes"]) == 0
    out = capsys.readouterr().out
    assert "all 2 checks passed" in out
    assert "determinism" in out and "shapes" in out


def test_unseeded_command_model_fails_determinism_with_exit_1(capsys):
    code = main(["models", "check", "command", *command_params("unseeded"),
                 "--only", "determinism", "--only", "shapes"])
    out = capsys.readouterr().out
    assert code == 1
    assert "1 of 2 checks failed (determinism)" in out
    assert "FAIL" in out and "rank lists" in out


def test_closed_form_model_passes_with_a_seed_warning(capsys):
    assert main(["models", "check", "item-item", "--param", "max_nbrs=10"]) == 0
    out = capsys.readouterr().out
    assert "warn" in out and f"all {len(CHECKS)} checks passed" in out and len(CHECKS) == 14
    for name, *_ in CHECKS:
        assert name in out


def test_bad_model_or_parameters_exit_2(capsys):
    assert main(["models", "check", "item-itme"]) == 2
    assert "item-item" in capsys.readouterr().err
    assert main(["models", "check", "item-item", "--param", "max_nbr=3"]) == 2
    assert "max_nbrs" in capsys.readouterr().err
    assert main(["models", "check", "item-item", "--only", "determinsm"]) == 2
    assert "determinism" in capsys.readouterr().err
    assert main(["models", "check", "item-item", "--param", "novalue"]) == 2


class _PeeksAtTargets:
    """Ranks every query's target first: what a leaking pipeline looks like."""

    def fit(self, train, *, seed):
        self.n_items_ = train.n_items
        return self

    def rank(self, queries, k=None):
        from recaudit.models import as_queries

        q = as_queries(queries)
        first = np.where(q.target >= 0, q.target, 0)
        rest = np.array([[i for i in range(self.n_items_) if i != f] for f in first])
        items = np.column_stack([first, rest])
        return RankLists(items[:, :k] if k else items)


def test_a_model_that_reads_targets_fails_that_check():
    results = {r.name: r for r in run_conformance(_PeeksAtTargets)}
    assert results["targets"].status == "FAIL"
    assert "depend on the queries' targets" in results["targets"].detail
    assert results["determinism"].status == "pass"
    assert results["one deletion"].status == "FAIL"  # it ignores its training data


def test_a_crashing_model_is_a_failure_not_a_crash():
    class Crashes:
        def fit(self, train, *, seed):
            raise RuntimeError("boom")

    results = run_conformance(Crashes, only=("shapes",))
    assert results[0].status == "FAIL" and results[0].detail == "RuntimeError: boom"
