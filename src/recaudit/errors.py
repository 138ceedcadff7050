"""Exception and warning types raised by recaudit, and the closest-name helper.

Every error a user can cause (bad file, bad config, bad argument) is a :class:`RecauditError`
subclass whose message says *what* is wrong, *where* (file, line, column, key) and *how to fix it*.
The CLI prints the message alone, on one line (no traceback unless ``--debug``), and exits with
code 2. ``ValueError``/``TypeError`` are kept for misuse of the Python API.

What the user's own code raises inside a run (a model's ``fit`` or ``rank``) reaches the caller
as a :class:`TrialError` naming the trial, with the original exception as its ``__cause__``; a
model that breaks the :class:`~recaudit.models.Recommender` contract (``rank`` returning
something other than ``RankLists``, one list too few) as a :class:`ModelError`. A write that the
file system refuses (no space left, a read-only or forbidden folder) is a :class:`StorageError`,
which says what could not be written where. A run stopped by Ctrl-C or SIGTERM raises
:class:`Interrupted` (a ``KeyboardInterrupt``) saying how many running trials it abandoned; the
finished ones are in the store.

Soft problems (something was skipped or adjusted, the result is still valid) are reported with
:class:`RecauditWarning` through :mod:`warnings`, and details through the module loggers
(``logging.getLogger("recaudit.<package>")``).
"""

from __future__ import annotations

import difflib
import errno as _errno
import os
import re
import signal
from collections.abc import Iterable

__all__ = ["RecauditError", "DataError", "ConfigError", "DatasetError", "StoreBusyError",
           "TrialError", "ModelError", "StorageError", "Interrupted", "RecauditWarning",
           "closest", "did_you_mean", "storage_error"]


def closest(name: str, choices: Iterable[object], *, cutoff: float = 0.6) -> str | None:
    """The choice most similar to ``name`` or ``None``.

    A case-insensitive exact match wins; otherwise :func:`difflib.get_close_matches` (ratio
    ``>= cutoff``) on the lower-cased names. Returns the choice as spelled in ``choices``.
    """
    spelled = {str(c).lower(): str(c) for c in choices}
    key = str(name).lower()
    if key in spelled:
        return spelled[key]
    hits = difflib.get_close_matches(key, list(spelled), n=1, cutoff=cutoff)
    return spelled[hits[0]] if hits else None


def did_you_mean(name: str, choices: Iterable[object], cutoff: float = 0.6) -> str:
    """``" Did you mean 'x'?"`` for the closest of ``choices`` to ``name``, or ``""``."""
    close = closest(name, choices, cutoff=cutoff)
    return f" Did you mean {close!r}?" if close is not None and close != name else ""


class RecauditError(Exception):
    """Base class of every error recaudit raises on purpose."""

    def one_line(self) -> str:
        """The message on one line (the CLI's form): continuation lines joined by ``"; "``."""
        return "; ".join(part.strip() for part in str(self).splitlines() if part.strip())


class RecauditWarning(UserWarning):
    """A soft problem: the result is valid, but something was skipped, dropped or adjusted."""


def _where(source: str | None, line: int | None, column: str | None = None,
           key: str | None = None) -> str:
    parts = [str(source)] if source else []
    if line is not None:
        parts.append(f"line {line}")
    if column is not None:
        parts.append(f"column {column!r}")
    if key is not None:
        parts.append(f"key {key!r}")
    return ", ".join(parts) + ": " if parts else ""


class DataError(RecauditError, ValueError):
    """Invalid interaction data.

    Parameters
    ----------
    message:
        What is wrong.
    source:
        The file (or ``"DataFrame"``) the data came from.
    line:
        1-based line number in ``source`` where the problem was found, if known.
    column:
        Column name involved, if any.
    hint:
        How to fix it.
    """

    def __init__(self, message: str, *, source: str | None = None, line: int | None = None,
                 column: str | None = None, hint: str | None = None) -> None:
        self.message = message
        self.source = source
        self.line = line
        self.column = column
        self.hint = hint
        super().__init__(self._render())

    def _render(self) -> str:
        text = _where(self.source, self.line, self.column) + self.message
        if self.hint:
            text += f"\n  hint: {self.hint}"
        return text

    def __reduce__(self):  # picklable across worker processes (keyword-only fields)
        return (_rebuild, (type(self), self.message, {"source": self.source, "line": self.line,
                                                      "column": self.column, "hint": self.hint}))


class ConfigError(RecauditError, ValueError):
    """Invalid configuration (TOML file, Python spec or command-line option).

    ``key`` is the dotted path of the offending key (``"executor.workers"``), ``source`` and
    ``line`` where it was written (set by the TOML loader), ``hint`` how to fix it. All are
    optional: ``ConfigError("message")`` is a complete error.
    """

    def __init__(self, message: str, *, key: str | None = None, source: str | None = None,
                 line: int | None = None, hint: str | None = None) -> None:
        self.message = message
        self.key = key
        self.source = source
        self.line = line
        self.hint = hint
        super().__init__(self._render())

    def _render(self) -> str:
        text = _where(self.source, self.line, key=self.key) + self.message
        if self.hint:
            text += f"\n  hint: {self.hint}"
        return text

    def located(self, *, key: str | None = None, source: str | None = None,
                line: int | None = None) -> ConfigError:
        """A copy with its location filled in (fields already set are kept)."""
        return ConfigError(self.message, key=self.key if self.key is not None else key,
                           source=self.source or source,
                           line=self.line if self.line is not None else line, hint=self.hint)

    def __reduce__(self):  # picklable across worker processes (keyword-only fields)
        return (_rebuild, (type(self), self.message, {"key": self.key, "source": self.source,
                                                      "line": self.line, "hint": self.hint}))


def _rebuild(cls: type, message: str, fields: dict) -> RecauditError:
    return cls(message, **fields)


class StoreBusyError(RecauditError):
    """Another process holds a results store open for writing (DuckDB allows one writer per
    file): wait for it to finish, or work on a copy."""


class DatasetError(RecauditError):
    """A registered dataset cannot be found, downloaded or verified."""


class ModelError(RecauditError):
    """A model broke the :class:`~recaudit.models.Recommender` contract: ``fit`` did not return
    the model, ``rank`` returned something other than :class:`~recaudit.data.RankLists`, not
    one list per query, lists longer than ``k`` or item codes outside the catalogue
    (:func:`recaudit.models.checked_rank`); or a model's constructor failed."""


class TrialError(RecauditError):
    """A trial of a run failed: the work it runs (a model's ``fit`` or ``rank``, a
    perturbation) raised ``error``, which is the ``__cause__`` (in a worker process, the
    cause carries the worker's traceback as text).

    ``trial`` names the trial (its label: model, perturbation, seed; else its id). The message
    is one line: the trial, the exception's type (left out for a :class:`RecauditError`,
    whose message says what is wrong) and its message. ``expected`` is true when ``error`` is
    a :class:`RecauditError` (its message is the whole story; a traceback adds nothing).
    """

    def __init__(self, trial: str, error: BaseException | str, *, expected: bool | None = None
                 ) -> None:
        self.trial = trial
        if isinstance(error, BaseException):
            expected = isinstance(error, RecauditError)
            error = (error.one_line() if isinstance(error, RecauditError)
                     else f"{type(error).__name__}: {' '.join(str(error).split())}".rstrip(": "))
        self.error = error
        self.expected = bool(expected)
        super().__init__(f"trial {trial} failed: {error}")

    def __reduce__(self):  # picklable across worker processes
        return (_rebuild_trial, (type(self), self.trial, self.error, self.expected))


def _rebuild_trial(cls: type, trial: str, error: str, expected: bool) -> TrialError:
    return cls(trial, error, expected=expected)


#: The ``errno`` values of a file system that refuses a write, and how to say them.
_STORAGE = {_errno.ENOSPC: "no space left on the device",
            _errno.EDQUOT: "the disk quota is exceeded",
            _errno.EROFS: "the file system is read-only",
            _errno.EACCES: "permission denied",
            _errno.EPERM: "operation not permitted"}


class StorageError(RecauditError, OSError):
    """The file system refused a write: no space left (``ENOSPC``, ``EDQUOT``), a read-only
    file system (``EROFS``) or a folder this user may not write (``EACCES``, ``EPERM``).

    ``path`` is what could not be written, ``reason`` why (``"no space left on the
    device"``), ``action`` what was being done (``"write"``, ``"create the folder"``, ...),
    ``code`` the ``errno``. The message is ``cannot <action> <path>: <reason>; <hint>``. An
    :class:`OSError` too (``errno`` set), so code that tolerates failed writes (a heartbeat)
    still does. Build one from an exception with :func:`storage_error`.
    """

    def __init__(self, path: str | os.PathLike, reason: str, *, action: str = "write",
                 code: int | None = None) -> None:
        self.path = str(path)
        self.reason = reason
        self.action = action
        self.code = code
        RecauditError.__init__(self, f"{self.what}; {self.hint}")
        self.errno = code
        self.strerror = reason
        self.filename = self.path

    @property
    def what(self) -> str:
        """``"cannot write /x/a.duckdb: no space left on the device"``."""
        return f"cannot {self.action} {self.path}: {self.reason}"

    @property
    def full(self) -> bool:
        """Whether the device is full (free space helps), rather than closed to writing."""
        return self.code in (_errno.ENOSPC, _errno.EDQUOT)

    @property
    def hint(self) -> str:
        return ("free space there, or write elsewhere" if self.full
                else "write elsewhere, to a folder you can write to")

    def __str__(self) -> str:
        return str(self.args[0])

    def __reduce__(self):  # picklable across worker processes (keyword-only fields)
        return (_rebuild_storage, (type(self), self.path, self.reason, self.action, self.code))


def _rebuild_storage(cls: type, path: str, reason: str, action: str, code: int | None
                     ) -> StorageError:
    return cls(path, reason, action=action, code=code)


def storage_error(exc: BaseException, path: str | os.PathLike | None = None, *,
                  action: str = "write", writing: bool = True) -> StorageError | None:
    """``exc`` as a :class:`StorageError` when it says that the file system refused a write,
    else ``None``: an ``OSError`` with one of the ``errno`` values of
    :class:`StorageError`, or another library's error whose message carries the system's
    text for one (DuckDB's ``IO Error: Could not write file "x.wal": No space left on
    device``). ``path``: what was being written (default: the error's file name, or the
    file its message quotes). ``writing=False``: ``exc`` comes from code that may have been
    reading, so only the refusals a write alone meets count (``ENOSPC``, ``EDQUOT``,
    ``EROFS``; a read can be denied too). A :class:`StorageError` is returned as it is."""
    if isinstance(exc, StorageError):
        return exc
    codes = [c for c in _STORAGE if writing or c not in (_errno.EACCES, _errno.EPERM)]
    named: str | None = None
    if isinstance(exc, OSError) and exc.errno in codes:
        code = exc.errno
        named = exc.filename if isinstance(exc.filename, str) else None
    elif isinstance(exc, OSError):
        return None
    else:
        text = str(exc)
        found = [c for c in codes if os.strerror(c) in text]
        if not found:
            return None
        code = found[0]
        quoted = re.search(r'file "([^"]+)"', text)
        named = quoted.group(1) if quoted else None
    where = path if path is not None else (named or "a file")
    return StorageError(where, _STORAGE[code], action=action, code=code)


class Interrupted(KeyboardInterrupt):
    """A run stopped by a signal: Ctrl-C (``SIGINT``) or ``SIGTERM`` (``signum``).

    ``abandoned`` is the number of trials that were running and were given up (their work
    is lost; ``None`` when not known); the trials that had finished are in the store, and
    running the same study again resumes. A ``KeyboardInterrupt``, so code that handles
    Ctrl-C handles it. ``exit_code`` is the shell's convention, ``128 + signum`` (130, 143).
    """

    def __init__(self, signum: int = signal.SIGINT, abandoned: int | None = None) -> None:
        self.signum = int(signum)
        self.abandoned = abandoned
        super().__init__(self.describe())

    @property
    def exit_code(self) -> int:
        return 128 + self.signum

    @property
    def signal_name(self) -> str:
        return "Ctrl-C" if self.signum == signal.SIGINT else signal.Signals(self.signum).name

    def describe(self) -> str:
        """``"interrupted (Ctrl-C); 2 running trials abandoned"``."""
        text = f"interrupted ({self.signal_name})"
        if self.abandoned is not None:
            n = self.abandoned
            text += f"; {n} running trial{'' if n == 1 else 's'} abandoned"
        return text

    @classmethod
    def of(cls, exc: BaseException, abandoned: int | None) -> Interrupted:
        """The :class:`Interrupted` for ``exc`` (a ``KeyboardInterrupt``: Ctrl-C, unless it
        is an :class:`Interrupted` already, whose signal is kept) with ``abandoned`` running
        trials."""
        return cls(getattr(exc, "signum", signal.SIGINT), abandoned)

    @classmethod
    def swallowed(cls, exc: BaseException, signum: int | None = None) -> Interrupted | None:
        """The interrupt a library reported as an error of its own, or ``None``: DuckDB runs
        the signal's handler during a query and replaces the ``KeyboardInterrupt`` it raises
        with ``RuntimeError('Query interrupted')`` (duckdb 2; ``InterruptException`` in 1.x),
        dropping the original. ``exc`` or an exception it was raised from counts; ``signum``:
        the signal if known (default Ctrl-C)."""
        seen: set[int] = set()
        while exc is not None and id(exc) not in seen:
            seen.add(id(exc))
            kind = type(exc)
            if (kind.__name__ == "InterruptException"
                    and kind.__module__.lstrip("_").startswith("duckdb")) or (
                    kind is RuntimeError and str(exc) == "Query interrupted"):
                return cls(signal.SIGINT if signum is None else signum)
            exc = exc.__cause__ or exc.__context__  # type: ignore[assignment]
        return None

    def __reduce__(self):
        return (type(self), (self.signum, self.abandoned))
