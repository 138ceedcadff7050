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

__all__ = ["epoch", "member", "report", "reporting", "resumed"]

Watcher = Callable[[Mapping[str, Any]], None]
_WATCHER: ContextVar[Watcher | None] = ContextVar("recaudit_progress", default=None)
_MEMBER: ContextVar[int | None] = ContextVar("recaudit_progress_member", default=None)


def report(**fields: Any) -> None:
    """Tell the watcher, if there is one, what the work is doing (``phase``, ``label``,
    ``epoch``/``epochs``, ...); inside :func:`member` the fields carry ``member``."""
    watcher = _WATCHER.get()
    if watcher is not None:
        who = _MEMBER.get()
        watcher(fields if who is None else {**fields, "member": who})


@contextmanager
def member(index: int) -> Iterator[None]:
    """Reports made inside concern member ``index`` of a stack of trials only (the others'
    heartbeats do not see them); reports outside concern every member."""
    token = _MEMBER.set(index)
    try:
        yield
    finally:
        _MEMBER.reset(token)


def epoch(done: int, total: int, stop_by: int | None = None) -> None:
    """A training loop finished epoch ``done`` of ``total``; ``stop_by``: the epoch at which
    early stopping ends it unless its validation improves (``None``: no early stopping)."""
    if stop_by is None:
        report(epoch=done, epochs=total)
    else:
        report(epoch=done, epochs=total, stop_by=stop_by)


def resumed(at: int, total: int) -> None:
    """A training loop took up a fit after its kept epoch ``at`` of ``total``
    (:mod:`recaudit._resume`): this process's epochs start there."""
    report(epoch=at, epochs=total, resumed_at=at)


@contextmanager
def reporting(watcher: Watcher | None) -> Iterator[None]:
    """Send the :func:`report` calls made inside to ``watcher`` (``None``: to nobody)."""
    token = _WATCHER.set(watcher)
    try:
        yield
    finally:
        _WATCHER.reset(token)
