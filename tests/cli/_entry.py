"""Run the ``recaudit`` command as a user does: ``python -m recaudit`` in a working folder."""

from __future__ import annotations

import contextlib
import io
import os
import subprocess
import sys
from pathlib import Path

import recaudit

#: The sources under test, first on the child's path (a relative PYTHONPATH would not reach
#: them from another working folder).
SOURCES = str(Path(recaudit.__file__).resolve().parents[1])


def command(*args: str) -> list[str]:
    """The command line of ``recaudit ARGS``."""
    return [sys.executable, "-m", "recaudit", *args]


def environment(env: dict[str, str] | None = None) -> dict[str, str]:
    """The child's environment: this one, with the sources under test first on the path."""
    path = os.pathsep.join(p for p in (SOURCES, os.environ.get("PYTHONPATH")) if p)
    return {**os.environ, "PYTHONPATH": path, **(env or {})}


def recaudit(*args: str, cwd: Path, env: dict[str, str] | None = None, umask: int | None = None,
             timeout: float = 600) -> subprocess.CompletedProcess[str]:
    """``python -m recaudit ARGS`` in ``cwd`` (under ``umask`` when given); stdout and stderr
    captured as text."""
    return subprocess.run(command(*args), cwd=cwd, env=environment(env), capture_output=True,
                          text=True, timeout=timeout,
                          preexec_fn=None if umask is None else (lambda: os.umask(umask)))


def recaudit_here(*args: str, cwd: Path, env: dict[str, str] | None = None
                  ) -> subprocess.CompletedProcess[str]:
    """``recaudit ARGS`` run in this process, as the console script runs it
    (``recaudit.cli.main``: its exit code, what it prints), in ``cwd`` with ``cwd`` first on
    the module path (as ``python -m`` puts it) and ``env`` set; returned as :func:`recaudit`
    returns a finished process. It spares the new interpreter's start and imports (1.5-2.5 s a
    call); tests of the process itself (a signal, its exit, the umask, a terminal, a traceback
    printed by ``--debug``) run :func:`recaudit`. Modules imported from ``cwd`` (a user's
    ``usermodels.py``) are forgotten afterwards: another test writes one of the same name."""
    from recaudit.cli import main

    modules, saved = set(sys.modules), {k: os.environ.get(k) for k in (env or {})}
    here, folder = os.getcwd(), str(cwd)
    out, err = io.StringIO(), io.StringIO()
    sys.path.insert(0, folder)
    try:
        os.environ.update(env or {})
        os.chdir(folder)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(list(args))
    finally:
        os.chdir(here)
        sys.path.remove(folder)
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        for name in set(sys.modules) - modules:
            if (getattr(sys.modules[name], "__file__", None) or "").startswith(folder):
                del sys.modules[name]
    return subprocess.CompletedProcess(["recaudit", *args], code, out.getvalue(),
                                       err.getvalue())


def one_error(proc: subprocess.CompletedProcess[str]) -> str:
    """The single ``error: ...`` line of a failed command (exit 2, no traceback)."""
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), proc.stderr
    return lines[0]


#: A model a user could write in a minute (popularity with seeded noise): an audit of it
#: takes well under a second, so tests run whole audits through the command.
POP = '''
import numpy as np

from recaudit.models import as_queries, top_k_from_scores


class Pop:
    def __init__(self, noise=0.5):
        self.noise = noise

    def get_params(self):
        return {"noise": self.noise}

    def fit(self, train, *, seed):
        rng = np.random.default_rng(seed)
        self.pop_ = np.bincount(train.item, minlength=train.n_items) \\
            + self.noise * rng.random(train.n_items)
        return self

    def rank(self, queries, k=None):
        q = as_queries(queries)
        return top_k_from_scores(np.tile(self.pop_, (len(q), 1)), k)
'''


def with_model(folder: Path, module: str = "popmodel") -> str:
    """Write :data:`POP` as ``folder/<module>.py``; returns its ``module:Class`` name."""
    (folder / f"{module}.py").write_text(POP)
    return f"{module}:Pop"


def tiny_log(folder: Path, users: int = 3, per_user: int = 12, seed: int = 0) -> Path:
    """``folder/tiny.csv``: ``users`` users of ``per_user`` plays of 16 songs, with user and
    item ids of the data's own (``u0``, ``song3``). The default split (each user's first 90 %
    trains) leaves 2 test queries per user: 6 in all."""
    import numpy as np

    rng = np.random.default_rng(seed)
    rows = [f"u{u},song{int(rng.integers(16))},{1000 + 10 * (per_user * u + t)}"
            for u in range(users) for t in range(per_user)]
    path = folder / "tiny.csv"
    path.write_text("user,item,timestamp\n" + "\n".join(rows) + "\n")
    return path
