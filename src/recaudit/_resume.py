"""Where long training keeps what it has learned so far, so that a killed run resumes a fit
from its last kept epoch instead of its first.

A paper-scale fit runs for hours (Betello et al. 2023's GRU4Rec at their settings: up to 300
epochs of 20-30 s on two CPU cores), longer than many sessions that run it last; a run that is
killed (a session's end, a lost machine, Ctrl-C) used to lose every epoch of the fits in
flight, since a trial's store learns only of finished trials. Inside :func:`resumable`, the
training loop of the sequential models (:mod:`recaudit.models.sequential`) keeps its state at
the end of an epoch in ``folder`` (at most once a minute, and at most a twentieth of the
training time) and, when it starts a fit whose state is kept there, continues from it; what it
computes is bit-identical either way (:mod:`recaudit.models.sequential._resume`). The audit's
workers train inside ``resumable(<store>.fits.d)``.

With ``keep_finished``, a finished fit's final state stays in the folder too, and a later fit
that trains the same thing (the same model class, parameters and arithmetic, device, torch
version, and each member's seed and training log) takes it instead of training: the two
perturbations of Betello et al. 2023's removal experiments, ``remove-end-10`` and
``remove-end-10+inputs``, differ only in the test queries their models rank, so their fits are
one (``[executor] keep_fits``).

This module holds only the folder (no torch): the experiment layer sets it for every trial,
whatever its model.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Resumable", "current", "resumable"]


@dataclass(frozen=True)
class Resumable:
    """Where fits keep their state (``folder``) and how often: at an epoch's end once
    ``every`` seconds have passed since the fit last kept it and 20 times the seconds that
    keeping took (``every=0``: every epoch); ``keep_finished``: a finished fit's state stays,
    for the next fit of the same training to take."""

    folder: Path
    every: float = 60.0
    keep_finished: bool = False


_WHERE: ContextVar[Resumable | None] = ContextVar("recaudit_resume", default=None)

#: the seconds between two keepings of a fit's state when :func:`resumable` is given none
EVERY = 60.0


@contextmanager
def resumable(folder: str | Path | None, every: float | None = None, *,
              keep_finished: bool = False) -> Iterator[None]:
    """Fits started inside keep their state in ``folder`` and resume from it (``None``: they
    keep nothing), at most once every ``every`` seconds (default :data:`EVERY`);
    ``keep_finished``: finished fits keep theirs too, and a fit of the same training takes it
    instead of training."""
    every = EVERY if every is None else every
    if every < 0:
        raise ValueError(f"every must be >= 0 seconds, got {every}")
    token = _WHERE.set(None if folder is None
                       else Resumable(Path(folder), float(every), bool(keep_finished)))
    try:
        yield
    finally:
        _WHERE.reset(token)


def current() -> Resumable | None:
    """Where fits started now keep their state (``None``: nowhere)."""
    return _WHERE.get()
