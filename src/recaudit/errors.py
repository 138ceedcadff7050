"""Exception types raised by recaudit.

Every error a user can cause (bad file, bad config, bad argument) is a :class:`RecauditError`
subclass whose message says *what* is wrong, *where* (file, line, column, key) and *how to fix it*.
The CLI prints the message alone (no traceback unless ``--debug``) and exits non-zero.
"""

from __future__ import annotations

__all__ = ["RecauditError", "DataError", "ConfigError", "DatasetError", "did_you_mean"]


def did_you_mean(name: str, choices, cutoff: float = 0.6) -> str:
    """``" Did you mean 'x'?"`` for the closest of ``choices`` to ``name``, or ``""``."""
    import difflib

    close = difflib.get_close_matches(name, list(choices), n=1, cutoff=cutoff)
    return f" Did you mean {close[0]!r}?" if close else ""


class RecauditError(Exception):
    """Base class of every error recaudit raises on purpose."""


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

    def __init__(
        self,
        message: str,
        *,
        source: str | None = None,
        line: int | None = None,
        column: str | None = None,
        hint: str | None = None,
    ) -> None:
        self.message = message
        self.source = source
        self.line = line
        self.column = column
        self.hint = hint
        super().__init__(self._render())

    def _render(self) -> str:
        where = []
        if self.source:
            where.append(str(self.source))
        if self.line is not None:
            where.append(f"line {self.line}")
        if self.column is not None:
            where.append(f"column {self.column!r}")
        text = (", ".join(where) + ": " if where else "") + self.message
        if self.hint:
            text += f"\n  hint: {self.hint}"
        return text


class ConfigError(RecauditError, ValueError):
    """Invalid configuration (TOML file or Python spec); the message names the key."""


class DatasetError(RecauditError):
    """A registered dataset cannot be found, downloaded or verified."""
