"""Exception and warning types raised by recaudit, and the closest-name helper.

Every error a user can cause (bad file, bad config, bad argument) is a :class:`RecauditError`
subclass whose message says *what* is wrong, *where* (file, line, column, key) and *how to fix it*.
The CLI prints the message alone, on one line (no traceback unless ``--debug``), and exits with
code 2. ``ValueError``/``TypeError`` are kept for misuse of the Python API.

Soft problems (something was skipped or adjusted, the result is still valid) are reported with
:class:`RecauditWarning` through :mod:`warnings`, and details through the module loggers
(``logging.getLogger("recaudit.<package>")``).
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable

__all__ = ["RecauditError", "DataError", "ConfigError", "DatasetError", "StoreBusyError",
           "RecauditWarning", "closest", "did_you_mean"]


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
        """The message on one line (the CLI's form): continuation lines joined with ``; ``."""
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
