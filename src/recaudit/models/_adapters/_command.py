"""Command models: audit a recommender that lives in any program or environment.

``create("command", train=TEMPLATE, rank=TEMPLATE, **params)`` (or ``name = "command"`` in an
audit's TOML) wraps two commands. ``fit(train, seed=s)`` runs ``train`` with

- ``{train}``: Parquet with ``user, item, timestamp[, rating]`` (original ids; the full id
  maps are in the file's ``recaudit`` metadata, see :func:`recaudit.data.write_parquet`);
- ``{seed}``: the integer training seed (same data + same seed must give the same model);
- ``{model_dir}``: an empty directory the program keeps its trained model in;
- ``{params}``: a JSON file with ``params`` (every keyword that is not an option below);

``rank(queries, k)`` runs ``rank`` with ``{model_dir}``, ``{queries}`` (Parquet, one row per
query, see :mod:`recaudit.models._adapters._command_io`), ``{k}`` (the catalogue size when ``k=None``) and
``{output}`` (where the program writes Parquet ``query, rank, item`` or ``query, item, score``).

A template is a string split with :func:`shlex.split` or a list of arguments; placeholders are
replaced inside each argument *after* splitting and nothing runs through a shell, so paths with
spaces are safe. Options: ``timeout`` (seconds per command), ``cwd`` (working directory,
default the current one), ``env`` (variables added to the environment), ``workdir`` (where the
temporary files go; default the context's scratch directory -- the store's directory during an
audit -- else the system's temp). A non-zero exit, a timeout, a missing program, a missing or
malformed output, an unknown item or a repeated rank is a :class:`CommandError` naming the
command and the file. Every temporary file is removed after ``fit``/``rank``; the model
directory when the model is closed (``close()``, which the audit runner calls after each
trial) or garbage-collected.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shlex
import signal
import subprocess
from collections.abc import Mapping
import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from recaudit.config import Config
from recaudit.data import Interactions, Queries, RankLists
from recaudit.errors import ConfigError, did_you_mean
from recaudit.models._adapters._command_io import CommandError, read_rank_output, write_queries
from recaudit.models._params import Configurable
from recaudit.models._protocol import as_queries
from recaudit.models._registry import register
from recaudit.models._scratch import make_workspace, pack_workspace, unpack_workspace

__all__ = ["CommandConfig", "CommandModel", "CommandError"]

_PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")
_FIELDS = {"train": ("train", "seed", "model_dir", "params"),
           "rank": ("model_dir", "queries", "k", "output")}
_REQUIRED = {"train": ("train",), "rank": ("queries", "output")}


def _parse_template(key: str, value: Any) -> Any:
    """A template string split with :func:`shlex.split`; lists (and other values, which the
    config's type check rejects) unchanged."""
    if not isinstance(value, str):
        return value
    try:
        return shlex.split(value)
    except ValueError as exc:
        raise ConfigError(f"{value!r} cannot be split into arguments ({exc})", key=key,
                          hint="check its quotes") from None


def _check_template(key: str, argv: tuple[str, ...]) -> None:
    if not argv:
        raise ConfigError("is empty; give the command to run", key=key)
    used = {m for arg in argv for m in _PLACEHOLDER.findall(arg)}
    for name in sorted(used - set(_FIELDS[key])):
        raise ConfigError(f"uses unknown placeholder {{{name}}}.{did_you_mean(name, _FIELDS[key])}"
                          " Known: " + ", ".join("{" + f + "}" for f in _FIELDS[key]), key=key)
    for name in _REQUIRED[key]:
        if name not in used:
            raise ConfigError(f"`{shlex.join(argv)}` never uses {{{name}}}; the program needs it",
                              key=key)


@dataclass(frozen=True)
class CommandConfig(Config):
    """A command model's configuration.

    train: the training command template (a string split with ``shlex``, or a list of
    arguments) with ``{train}``, ``{seed}``, ``{model_dir}``, ``{params}``.
    rank: the ranking command template with ``{model_dir}``, ``{queries}``, ``{k}``,
    ``{output}``.
    params: written as JSON to ``{params}``; any other keyword given to the model lands here.
    timeout: seconds allowed per command (> 0).
    cwd: the commands' working directory (default: the current one).
    env: environment variables added for the commands.
    workdir: parent directory of the temporary files (default: the store's directory during an
    audit, else the system's temporary directory).
    """

    train: tuple[str, ...]
    rank: tuple[str, ...]
    params: Mapping[str, Any] = field(default_factory=dict)
    timeout: float = 3600.0
    cwd: str | None = None
    env: Mapping[str, str] = field(default_factory=dict)
    workdir: str | None = None

    @classmethod
    def _normalise(cls, data: dict[str, Any]) -> dict[str, Any]:
        # template strings are split here; keywords that are not options are the program's
        fields = {f.name for f in dataclasses.fields(cls)}
        extra = {k: data.pop(k) for k in list(data) if k not in fields}
        if extra:
            inner = data.get("params") or {}
            if not isinstance(inner, Mapping):
                raise ConfigError("expected a table of values", key="params")
            data["params"] = {**inner, **extra}
        for key in ("train", "rank"):
            if key in data:
                data[key] = _parse_template(key, data[key])
        return data

    def validate(self) -> None:
        for key in ("train", "rank"):
            _check_template(key, getattr(self, key))
        if self.timeout <= 0:
            raise self.invalid("timeout", f"must be a number of seconds > 0, got {self.timeout!r}")
        try:
            json.dumps(dict(self.params))
        except (TypeError, ValueError) as exc:
            raise self.invalid("params", f"must hold JSON values ({exc})") from None
        bad = [k for k, v in self.env.items() if not isinstance(k, str) or not isinstance(v, str)]
        if bad:
            raise self.invalid("env", f"must map variable names to strings; {bad[0]!r} does not")
        if self.cwd is not None and not Path(self.cwd).is_dir():
            raise self.invalid("cwd", f"{self.cwd!r} is not a directory")


def _fill(argv: tuple[str, ...], values: Mapping[str, str]) -> list[str]:
    return [_PLACEHOLDER.sub(lambda m: values[m.group(1)], arg) for arg in argv]


def _tail(text: str, lines: int = 15) -> str:
    rows = text.strip().splitlines()[-lines:]
    return "\n".join("    " + r for r in rows)


@register("command")
class CommandModel(Configurable):
    """A model trained and queried by external commands (any program, any environment)."""

    Config = CommandConfig

    def __init__(self, **params: Any) -> None:
        super().__init__(**params)
        self._workspace: Path | None = None
        self._finalizer: Any = None
        self._calls = 0

    def __repr__(self) -> str:
        return f"CommandModel(train={shlex.join(self.config.train)!r})"

    def __getstate__(self) -> dict[str, Any]:
        # the trained model is the workspace's files: a copy carries them (see _scratch)
        state = {k: v for k, v in self.__dict__.items() if k not in ("_workspace", "_finalizer")}
        if self._workspace is not None:
            state["_files"] = pack_workspace(self._workspace)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        files = state.pop("_files", None)
        self.__dict__.update(state, _workspace=None, _finalizer=None)
        if files is not None:
            self._workspace, self._finalizer = unpack_workspace(self, "recaudit-command-", files)

    # ------------------------------------------------------------------ running
    def _run(self, key: str, argv: list[str], files: str) -> None:
        where = f"command model: {key} command `{shlex.join(argv)}`"
        env = {**os.environ, **self.config.env}
        try:
            proc = subprocess.Popen(argv, cwd=self.config.cwd, env=env, stdin=subprocess.DEVNULL,
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                    start_new_session=True)
        except OSError as exc:
            raise CommandError(f"{where} cannot start: {exc.strerror or exc}\n  hint: check "
                               f"that {argv[0]!r} exists and is executable (cwd "
                               f"{self.config.cwd or os.getcwd()})") from exc
        try:
            out, err = proc.communicate(timeout=self.config.timeout)
        except subprocess.TimeoutExpired:
            _kill(proc)
            out, err = proc.communicate()
            raise CommandError(f"{where} timed out after {self.config.timeout:g} s and was "
                               f"killed ({files})\n  hint: raise timeout=... or make the "
                               "command faster") from None
        except BaseException:  # Ctrl-C, or the run stopping this worker: the program goes too
            _kill(proc)
            raise
        if proc.returncode != 0:
            raise CommandError(f"{where} failed with exit code {proc.returncode} ({files})\n"
                               f"  its output ends with:\n{_tail(err or out) or '    (nothing)'}")

    def _check_fitted(self) -> Path:
        if self._workspace is None:
            raise RuntimeError("CommandModel is not fitted; call fit(train, seed=...)")
        return self._workspace

    def fit(self, train: Interactions, *, seed: int) -> CommandModel:
        """Run the train command on ``train`` with ``seed`` (replaces any earlier fit)."""
        if not isinstance(train, Interactions):
            raise TypeError(f"train must be Interactions, got {type(train).__name__}")
        if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
            raise TypeError(f"seed must be an int, got {type(seed).__name__}")
        from recaudit.data import write_parquet

        self.close()
        ws, self._finalizer = make_workspace(self, "recaudit-command-", self.config.workdir)
        self._workspace = ws
        model_dir = ws / "model"
        model_dir.mkdir()
        train_path, params_path = ws / "train.parquet", ws / "params.json"
        write_parquet(train, train_path)
        params_path.write_text(json.dumps(self.config.params, sort_keys=True))
        argv = _fill(self.config.train, {"train": str(train_path), "seed": str(int(seed)),
                                         "model_dir": str(model_dir), "params": str(params_path)})
        try:
            self._run("train", argv, f"train file {train_path}")
        finally:
            train_path.unlink(missing_ok=True)
            params_path.unlink(missing_ok=True)
        self.user_ids_, self.item_ids_ = train.user_ids, train.item_ids
        self.n_items_ = train.n_items
        return self

    def rank(self, queries: Queries | Interactions, k: int | None = None) -> RankLists:
        """Run the rank command on ``queries`` and read its top-``k`` lists."""
        ws = self._check_fitted()
        q = as_queries(queries)
        if q.n_items != self.n_items_:
            raise ValueError(f"queries have a catalogue of {q.n_items} items, the model "
                             f"{self.n_items_}")
        if k is not None and (isinstance(k, bool) or not isinstance(k, (int, np.integer))
                              or k < 1):
            raise ValueError(f"k must be a positive integer or None, got {k!r}")
        depth = self.n_items_ if k is None else int(min(k, self.n_items_))
        self._calls += 1
        job = ws / f"rank-{self._calls}"
        job.mkdir()
        q_path, out_path = job / "queries.parquet", job / "output.parquet"
        try:
            write_queries(q, self.user_ids_, self.item_ids_, q_path)
            argv = _fill(self.config.rank, {"model_dir": str(ws / "model"),
                                            "queries": str(q_path), "k": str(depth),
                                            "output": str(out_path)})
            self._run("rank", argv, f"queries file {q_path}, output file {out_path}")
            where = f"command model: rank command `{shlex.join(argv)}`, output file {out_path}"
            return read_rank_output(out_path, where, len(q), self.item_ids_, depth)
        finally:
            import shutil

            shutil.rmtree(job, ignore_errors=True)

    def close(self) -> None:
        """Remove the model directory and every temporary file (the model is unfitted)."""
        if self._finalizer is not None:
            self._finalizer()
        self._workspace = None
        self._finalizer = None


def _kill(proc: subprocess.Popen) -> None:
    """Kill the process group a command started (it runs in a session of its own, so no
    signal of the terminal's reaches it), and reap it."""
    with contextlib.suppress(ProcessLookupError):  # it may have just ended
        os.killpg(proc.pid, signal.SIGKILL)
    with contextlib.suppress(Exception):
        proc.wait(timeout=5)
