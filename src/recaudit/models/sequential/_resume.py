"""A fit's state at an epoch's end, kept on disk so that a killed fit resumes where it was.

Inside :func:`recaudit._resume.resumable` the training loop (:mod:`._train`) keeps, at the end
of an epoch, everything the epochs after it read:

- the stack's parameters (every member) and the optimiser's state (each member's Adam
  moments and step counts, :class:`._nn.StackAdam`);
- per member (course): its history, its TracIn checkpoints, its early-stopping state (best
  validation value, the parameters of that epoch, epochs without improvement, stopped or
  not), the state of its loss generator (BERT4Rec's Cloze masks draw from it) and what its
  last epoch left for :meth:`Course.finish` (JODIE's dynamic embeddings);
- the next epoch's number, and the wall seconds the fit has taken up to it (a resumed fit
  reports them in ``resumed_seconds_``, which the audit adds to the trial's fit time: a
  trial's time is what it took, not what its last process took).

Nothing else carries from one epoch to the next: batch orders come from
``make_rng(seed, name, "order", epoch)`` and dropout masks from counters keyed by the
member's seed, the epoch and the step (:mod:`._draws`), so a resumed fit computes the same
bits as one that was never stopped (tested for every model, alone and in a stack).

The file is ``<folder>/<key>.pt`` (and ``<key>.json``: the model, the seeds, the epoch kept,
when, and the seconds of training it holds, for ``recaudit status``), where the key is a
SHA-256 of what decides the fit's bits: the model's class, parameters and arithmetic
(:meth:`implementation_of`), the device, the torch version, and each member's seed and
training log (its fingerprint). A different fit never reads another's state; a finished fit
removes its file. It is written whole or not at all (:func:`recaudit._files.atomic_path`),
read with ``torch.load(weights_only=True)`` (no code runs from it), and a file that cannot be
read is set aside with a warning (the fit starts from its first epoch). Keeping costs a copy
of the parameters, the moments and the best epoch's parameters: it happens at most once every
``every`` seconds and at most once every 20 times the seconds the last keeping took, so it
adds at most about 5 % to a fit. A state that cannot be written (a full or read-only disk)
stops the keeping, never the fit.

**A finished fit's state** stays when the folder asks for it (``keep_finished``,
:func:`recaudit._resume.resumable`): written after the last epoch (whatever the interval), before
the members' best parameters are put back, and marked ``finished``. A fit with the same key
then restores it, trains no epoch (every member has stopped, or the epochs are done) and ends
as the first one did, bit for bit: the same best parameters, history, checkpoints and last
epoch's state. Its ``resumed_seconds_`` are the first fit's seconds (what the trial's fit
took, though not in this process). Without ``keep_finished`` a finished fit removes its file,
as does a fit whose last keeping could not be written.
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch

from recaudit._files import atomic_path, atomic_text
from recaudit._resume import Resumable
from recaudit.errors import RecauditWarning, StorageError
from recaudit.models.sequential._course import Course
from recaudit.models.sequential._nn import SequenceNet, StackAdam

__all__ = ["Keeper", "class_path", "fit_key", "forget"]

log = logging.getLogger(__name__)

#: the layout of the kept file; a file of another layout is not read
LAYOUT = 1

_S = "recaudit.models.sequential"
#: the built-in models' classes under the paths their states were first kept by (they moved
#: into a package per family, issue 61): the key names a class by its former path, so the
#: states kept before the move resume after it
_KEPT_AS = {f"{_S}.{new}": f"{_S}.{old}" for new, old in (
    ("_jodie._model.JODIE", "_jodie.JODIE"),
    ("_latentcross._model.LatentCross", "_latentcross.LatentCross"),
    ("_attention._sasrec.SASRec", "_sasrec.SASRec"),
    ("_attention._tisasrec.TiSASRec", "_tisasrec.TiSASRec"),
    ("_attention._bert4rec.BERT4Rec", "_bert4rec.BERT4Rec"))}


def class_path(model: Any) -> str:
    """The name of ``model``'s class in the key of its kept states: ``module.Class``, under
    its former module for the built-in models that moved (:data:`_KEPT_AS`)."""
    path = f"{type(model).__module__}.{type(model).__qualname__}"
    return _KEPT_AS.get(path, path)


def fit_key(courses: Sequence[Course]) -> str:
    """The SHA-256 of what decides the bits of training ``courses`` as one stack."""
    first = courses[0]
    model = first.model
    params = model.get_params()
    what = {"layout": LAYOUT, "class": class_path(model),
            "params": params, "device": str(first.device), "torch": torch.__version__,
            "implementation": model.implementation_of(params, first.device),
            "group_ptr": None if getattr(model, "_group_ptr", None) is None
            else hashlib.sha256(np.asarray(model._group_ptr).tobytes()).hexdigest(),
            "members": [[c.seed, c.train.fingerprint()] for c in courses]}
    text = json.dumps(what, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:40]


class Keeper:
    """The kept state of one stack's fit in ``where.folder`` (see the module docstring)."""

    def __init__(self, courses: Sequence[Course], where: Resumable) -> None:
        self.courses = list(courses)
        self.every = where.every
        self.path = Path(where.folder) / f"{fit_key(self.courses)}.pt"
        self._kept_at = self._started = time.perf_counter()
        self._cost = 0.0
        self._broken = False   # a keeping failed: no more
        self.keep_finished = where.keep_finished
        self._final = False    # the file holds the finished fit's state
        #: the wall seconds the fit spent before this process took it up (up to the kept
        #: epoch, in the processes that kept it), which a resumed fit's time adds
        self.carried = 0.0

    def restore(self, net: SequenceNet, opt: StackAdam, last: dict[int, Any]) -> int:
        """Load the kept state into ``net``, ``opt``, the courses and ``last`` (each course's
        last epoch state, by ``id``); returns the epoch to start from (0: nothing kept)."""
        if not self.path.is_file():
            return 0
        try:
            state = torch.load(self.path, map_location=self.courses[0].device,
                               weights_only=True)
            if state.get("layout") != LAYOUT or len(state["courses"]) != len(self.courses) \
                    or len(state["last"]) != len(self.courses) or "net" not in state:
                raise ValueError("it was written for another layout or stack")
        except Exception as exc:  # noqa: BLE001 - any unreadable file: start over, say so
            aside = self.path.with_name(self.path.name + ".unreadable")
            try:
                self.path.replace(aside)
                self.path.with_suffix(".json").unlink(missing_ok=True)
            except OSError as err:  # a read-only folder: the next keeping replaces it
                log.info("cannot set %s aside (%s)", self.path, err)
            warnings.warn(f"the kept state of a {self.courses[0].name} fit, {self.path}, "
                          f"cannot be read ({type(exc).__name__}: {exc}); it is moved to "
                          f"{aside.name} and the fit starts from its first epoch",
                          RecauditWarning, stacklevel=4)
            return 0
        # (a state kept before the seconds were: its epochs' own seconds)
        self.carried = float(state["seconds"]) if "seconds" in state else max(
            sum(r["seconds"] for r in kept["history"]) for kept in state["courses"])
        net.load_state_dict(state["net"])
        opt.load_state(state["optimizer"])
        for c, kept, end in zip(self.courses, state["courses"], state["last"], strict=True):
            c.history, c.checkpoints = kept["history"], kept["checkpoints"]
            c.best, c.best_state = kept["best"], kept["best_state"]
            c.stale, c.stopped = kept["stale"], kept["stopped"]
            c.loss_rng.bit_generator.state = kept["loss_rng"]
            if end is not None:
                last[id(c)] = end
        epoch = int(state["epoch"])
        self._final = bool(state.get("finished", False))
        log.info("%s a %s fit at epoch %d from %s", "taking the finished" if self._final
                 else "resuming", self.courses[0].name, epoch + 1, self.path)
        return epoch

    def keep(self, epoch: int, net: SequenceNet, opt: StackAdam, last: dict[int, Any]
             ) -> None:
        """Keep the state after epoch ``epoch`` (0-based) if it is time to."""
        now = time.perf_counter()
        if self._broken or (self.every and now - self._kept_at < max(self.every,
                                                                      20 * self._cost)):
            return
        self._write(epoch + 1, net, opt, last, now)

    def keep_final(self, epochs: int, net: SequenceNet, opt: StackAdam, last: dict[int, Any]
                   ) -> None:
        """The fit has trained its ``epochs`` epochs (before its members' best parameters
        are put back): keep its finished state if the folder asks for it and the file does
        not hold it yet."""
        if self.keep_finished and not self._final and not self._broken:
            self._write(epochs, net, opt, last, time.perf_counter(), finished=True)
            self._final = not self._broken

    def _write(self, epochs: int, net: SequenceNet, opt: StackAdam, last: dict[int, Any],
               now: float, finished: bool = False) -> None:
        seconds = self.carried + now - self._started
        state = {"layout": LAYOUT, "epoch": epochs, "net": net.state_dict(),
                 "seconds": seconds, "finished": finished,
                 "optimizer": opt.state(),
                 "courses": [{"history": c.history, "checkpoints": c.checkpoints,
                              "best": c.best, "best_state": c.best_state, "stale": c.stale,
                              "stopped": c.stopped,
                              "loss_rng": c.loss_rng.bit_generator.state}
                             for c in self.courses],
                 "last": [last.get(id(c)) for c in self.courses]}
        first = self.courses[0]
        about = {"model": first.name, "seeds": [c.seed for c in self.courses],
                 "epoch": epochs, "epochs": first.config.epochs, "kept": time.time(),
                 "seconds": round(seconds, 1), **({"finished": True} if finished else {})}
        try:
            with atomic_path(self.path) as tmp:
                torch.save(state, tmp)
            atomic_text(self.path.with_suffix(".json"), json.dumps(about))
        except (OSError, StorageError) as exc:
            # keeping saves time, it is not the work: a full or read-only disk stops the
            # keeping (said once, at INFO like a heartbeat: a worker never prints), not the fit
            log.info("cannot keep the state of a %s fit in %s (%s); it goes on without",
                     first.name, self.path.parent, exc)
            self._broken = True
        self._kept_at = time.perf_counter()
        self._cost = self._kept_at - now

    def finish(self) -> None:
        """The fit is done: its kept state is no longer needed, unless it is the finished
        state the folder keeps."""
        if not (self.keep_finished and self._final):
            forget(self.path)


def forget(path: Path) -> None:
    """Remove the kept state at ``path`` (``<key>.pt``) and its ``.json``, if there."""
    for p in (path, path.with_suffix(".json")):
        if p.is_file():     # (a folder that could not be made holds none)
            p.unlink(missing_ok=True)
