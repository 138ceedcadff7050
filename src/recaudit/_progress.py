"""Live progress of long work, for whoever watches it (``recaudit status``).

Code that runs long calls :func:`report` with what it is doing — the audit runner its phase
(``phase="perturbed fit"``), a model's training loop each finished epoch (:func:`epoch`) — and
the calls cost nothing unless a watcher is installed with :func:`reporting` (a worker running
a trial installs one that writes the trial's heartbeat file,
:class:`recaudit.experiment.Heartbeat`). Nothing here changes what is computed.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

__all__ = ["epoch", "report", "reporting"]

Watcher = Callable[[Mapping[str, Any]], None]
_WATCHER: ContextVar[Watcher | None] = ContextVar("recaudit_progress", default=None)


def report(**fields: Any) -> None:
    """Tell the watcher, if there is one, what the work is doing (``phase``, ``label``,
    ``epoch``/``epochs``, ...)."""
    watcher = _WATCHER.get()
    if watcher is not None:
        watcher(fields)


def epoch(done: int, total: int) -> None:
    """A training loop finished epoch ``done`` of ``total``."""
    report(epoch=done, epochs=total)


@contextmanager
def reporting(watcher: Watcher | None) -> Iterator[None]:
    """Send the :func:`report` calls made inside to ``watcher`` (``None``: to nobody)."""
    token = _WATCHER.set(watcher)
    try:
        yield
    finally:
        _WATCHER.reset(token)
