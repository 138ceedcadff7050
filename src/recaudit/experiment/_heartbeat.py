"""What each running trial is doing, while it runs: one small file per trial.

A run publishes how many trials are done (:func:`~recaudit.experiment.read_progress`); a
trial of a paper-scale audit can take an hour, so that count says little about the trials in
flight. Each worker therefore keeps a *heartbeat* for the trial it runs,
``<store>.progress.d/<trial id>.json``: its label (model, perturbation, seed), its phase
(``loading data``, ``baseline fit``, ``perturbing``, ``perturbed fit``, ``perturbed
ranking``, ...), the epoch its model's training loop last finished, when the phase began and
the worker's pid. The work reports through :mod:`recaudit._progress`; this module turns the
reports into the file, at most one write per second (every phase change is written), and
removes the file when the trial ends, however it ends.

:func:`heartbeats` reads them back for ``recaudit status``, keeping only those whose worker is
alive (a killed run leaves files that are then ignored, and removed by the next run). The
remaining time of a phase is estimated from its epochs: ``elapsed / epoch * (epochs -
epoch)``. A heartbeat that cannot be written (a full or read-only disk) is logged once (at
INFO: ``recaudit -v``) and given up: watching never fails a trial. Ray's workers may run on other machines, so runs on
Ray keep none.
"""

from __future__ import annotations

import json
import logging
import os
import time
from collections.abc import Mapping
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from recaudit import _progress
from recaudit._files import atomic_text

__all__ = ["Heartbeat", "clear_heartbeats", "fits_dir", "heartbeat_dir", "heartbeats",
           "kept_fits"]

log = logging.getLogger(__name__)


def heartbeat_dir(store: str | Path) -> Path:
    """Where the trials running on ``store`` keep their heartbeats."""
    store = Path(store)
    return store.with_name(store.name + ".progress.d")


def fits_dir(store: str | Path) -> Path:
    """Where the fits of the trials running on ``store`` keep their state, so that a killed
    run's next run resumes them (:func:`recaudit._resume.resumable`; a fit removes its file
    when it finishes; the folder can be deleted whenever no run is running)."""
    store = Path(store)
    return store.with_name(store.name + ".fits.d")


def kept_fits(store: str | Path) -> list[dict[str, Any]]:
    """The fits whose state a stopped run on ``store`` kept (:func:`fits_dir`), oldest
    first: each one's ``model``, ``seeds`` (one per member of its stack), the ``epoch`` kept
    of its ``epochs``, when (``kept``, seconds since the epoch) and the wall ``seconds`` of
    training it holds (absent from a state kept before they were recorded); ``finished``:
    true for a finished fit kept for the trials that train it again (``[executor]
    keep_fits``)."""
    out = [about for path, about in _read(fits_dir(store))
           if path.with_suffix(".pt").is_file()]
    return sorted(out, key=lambda a: a.get("kept", 0))


def _read(folder: Path) -> list[tuple[Path, dict[str, Any]]]:
    """The JSON objects of ``folder``'s ``*.json`` files that can be read now (one being
    replaced, or removed since the listing, is left out)."""
    out = []
    for path in sorted(folder.glob("*.json")) if folder.is_dir() else ():
        try:
            value = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        if isinstance(value, dict):
            out.append((path, value))
    return out


class Heartbeat:
    """The heartbeat of trial ``trial_id`` in ``folder``, while the ``with`` block runs;
    inside it :func:`recaudit._progress.report` writes to it."""

    def __init__(self, folder: str | Path, trial_id: str, *, every: float = 1.0) -> None:
        self.path = Path(folder) / f"{trial_id}.json"
        self.every = every
        now = time.time()
        self.state: dict[str, Any] = {"trial_id": trial_id, "pid": os.getpid(), "started": now,
                                      "phase": "starting", "phase_started": now}
        self._written = 0.0
        self._broken = False

    def __call__(self, fields: Mapping[str, Any]) -> None:
        now = time.time()
        if "phase" in fields and fields["phase"] != self.state.get("phase"):
            for key in ("epoch", "epochs", "stop_by", "resumed_at"):
                self.state.pop(key, None)
            self.state["phase_started"] = now
            self._written = 0.0                      # a new phase is always written
        self.state.update(fields)
        if now - self._written >= self.every:
            self._write(now)

    def _write(self, now: float) -> None:
        if self._broken:
            return
        self.state["updated"] = now
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            atomic_text(self.path, json.dumps(self.state))
        except OSError as exc:
            self._broken = True
            # info, not a warning: a worker never prints (a full disk would make every
            # worker say it); the run's own progress file warns once, in the driver
            log.info("cannot write the heartbeat %s (%s); the trial goes on without one",
                     self.path, exc)
        self._written = now

    def __enter__(self) -> Heartbeat:
        self._write(time.time())
        self._watching = ExitStack()
        self._watching.enter_context(_progress.reporting(self))
        return self

    def __exit__(self, *exc: object) -> None:
        self._watching.close()
        try:
            self.path.unlink(missing_ok=True)
        except OSError as err:
            if not self._broken:                # else the message was given already
                log.info("cannot remove the heartbeat %s (%s)", self.path, err)


def _alive(pid: Any) -> bool:
    try:
        os.kill(int(pid), 0)
    except (OSError, ValueError, TypeError):
        return False
    return True


def heartbeats(store: str | Path) -> list[dict[str, Any]]:
    """The heartbeats of the trials running on ``store`` now, oldest first; each has
    ``elapsed`` (seconds in its phase) and, once an epoch is done, ``remaining`` (seconds of
    the phase left, from its epochs so far: those of this process when it resumed a kept fit,
    ``resumed_at``) and, with early stopping, ``remaining_if_stopped`` (the seconds until
    ``stop_by``, the epoch at which it stops unless its validation improves)."""
    out = []
    for _, beat in _read(heartbeat_dir(store)):
        if not _alive(beat.get("pid")):
            continue
        now = time.time()
        beat["elapsed"] = now - float(beat.get("phase_started", now))
        done, total = beat.get("epoch"), beat.get("epochs")
        start = beat.get("resumed_at", 0)       # this process's first epoch is start + 1
        if isinstance(done, int) and isinstance(total, int) and done > start:
            per_epoch = beat["elapsed"] / (done - start)
            beat["remaining"] = per_epoch * max(total - done, 0)
            stop_by = beat.get("stop_by")
            if isinstance(stop_by, int) and stop_by < total:
                beat["remaining_if_stopped"] = per_epoch * max(stop_by - done, 0)
        out.append(beat)
    return sorted(out, key=lambda b: b.get("started", 0.0))


def clear_heartbeats(store: str | Path) -> None:
    """Remove the heartbeats a killed run left behind (at the start of a run, which holds
    the store: no other run's trials can be running on it)."""
    folder = heartbeat_dir(store)
    if folder.is_dir():
        for path in folder.iterdir():
            path.unlink(missing_ok=True)
        folder.rmdir()
