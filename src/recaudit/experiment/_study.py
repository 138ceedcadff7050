"""Studies: the kinds of experiment that run through this layer, and how one runs.

A *study* (the stability audit, fuzzing, property templates, MIRROR) declares

- ``kind`` — its name in stores and on the command line (``"audit"``, ``"fuzz"``, ...);
- ``tables`` — the :class:`~recaudit.experiment.Table` s it writes; the first holds one row
  per finished trial, keyed by ``trial_id``;
- :meth:`~Study.plan` — its trials (:class:`Trial`: id, a picklable job, the group whose
  product it shares, the datasets it reads);
- ``run`` / ``share`` / ``prime`` — module-level functions a worker calls on a job (``share``
  makes a group's product once, e.g. the audit's baseline, on executors without a shared disk;
  ``prime`` makes it on the disk a process pool's workers share, before the group's trials,
  which then all start at once; either may be ``None``);
- :meth:`~Study.write` — how an outcome becomes rows (one transaction), returning its id;
- :meth:`~Study.facts` — what the store keeps about the run (``meta``: config, data summary).

:func:`run_study` does the rest the same way for every study: creates the tables (and adds
columns that newer releases declared, with their defaults), records the plan (table
``plans``: which trial ids this configuration asked for, so ``recaudit status`` can say "12
of 16" however many configurations share a store), runs the trials the store does not hold
yet on the study's executor (in-process, process pool or Ray), writes each result as it
arrives, and publishes its progress beside the store (:func:`progress_path`) so the store can
be watched while the run holds it, with a heartbeat per trial in flight
(:mod:`recaudit.experiment._heartbeat`: phase, epoch, time left).

A :class:`StudyInfo` is what readers need of a study: its tables, the columns ``status``
counts by, and its per-trial summary for ``recaudit results``.
"""

from __future__ import annotations

import functools
import json
import os
import time
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Protocol

from recaudit._files import atomic_text
from recaudit._ids import spec_id
from recaudit.errors import (RecauditError, RecauditWarning, StorageError, TrialError,
                             storage_error)
from recaudit.experiment._heartbeat import Heartbeat, clear_heartbeats, heartbeat_dir
from recaudit.experiment._run import run_pending
from recaudit.experiment._schema import PLANS, Table
from recaudit.experiment._specs import DatasetSpec, ExecutorSpec
from recaudit.experiment._store import Store

__all__ = ["Trial", "Study", "StudyInfo", "run_study", "progress_path", "read_progress"]


@dataclass(frozen=True)
class Trial:
    """One planned trial: ``id`` (its key in the store), ``job`` (what the study's ``run``
    function receives; small and picklable), ``group`` (trials of a group share a product:
    the first runs first, the rest after it), ``datasets`` (what it reads, shipped to Ray
    workers), ``label`` (how messages name it: model, perturbation, seed; default its id)."""

    id: str
    job: Any
    group: str | None = None
    datasets: tuple[DatasetSpec, ...] = ()
    label: str = ""

    @property
    def name(self) -> str:
        """How messages name the trial: its label, else its id."""
        return self.label or self.id


class Study(Protocol):
    """A kind of experiment (see the module docstring)."""

    kind: ClassVar[str]
    tables: ClassVar[tuple[Table, ...]]

    @property
    def output(self) -> str | Path: ...

    @property
    def executor(self) -> ExecutorSpec: ...

    def plan(self) -> Sequence[Trial]: ...

    def facts(self) -> Mapping[str, Any]: ...

    def write(self, store: Store, outcome: Any) -> str: ...

    # module-level functions (picklable): run(job) -> outcome, share(job) -> product | None,
    # prime(job) -> None: leaves a group's product on the workers' shared disk (process pool)
    run: ClassVar[Callable[..., Any]]
    share: ClassVar[Callable[..., Any] | None]
    prime: ClassVar[Callable[..., Any] | None]


@dataclass(frozen=True)
class StudyInfo:
    """What readers need of a study: ``kind``, a ``title``, its ``tables`` (the first: one
    row per finished trial), the columns of that table ``status`` counts by, ``summary``:
    one row per trial with its results (``recaudit results``), and ``decisions``: one row per
    condition with intervals and tests (``recaudit results --summary``; ``None`` for a study
    whose values are exact)."""

    kind: str
    title: str
    tables: tuple[Table, ...]
    breakdown: tuple[str, ...]
    summary: Callable[[Store], Any]
    decisions: Callable[[Store], Any] | None = None

    @property
    def trials(self) -> Table:
        return self.tables[0]

    def present(self, store: Store) -> bool:
        """Whether ``store`` holds this study's trials table."""
        return self.trials.name in store.tables()


def _call(run: Callable[..., Any], beats: str | None, trial: Trial, *product: Any) -> Any:
    """A worker runs ``trial`` (keeping its heartbeat in ``beats``, a folder, if given); an
    error it raises becomes a :class:`~recaudit.errors.TrialError` naming the trial (the
    error its cause)."""
    try:
        if beats is None:
            return run(trial.job, *product)
        with Heartbeat(beats, trial.id):
            return run(trial.job, *product)
    except (TrialError, StorageError):  # a full disk is not the trial's fault: say where
        raise
    except Exception as exc:
        raise (storage_error(exc, writing=False) or TrialError(trial.name, exc)) from exc


def progress_path(store: str | Path) -> Path:
    """Where a running study publishes its progress: ``<store>.progress.json``."""
    store = Path(store)
    return store.with_name(store.name + ".progress.json")


def read_progress(store: str | Path) -> dict[str, Any] | None:
    """The progress a study run published beside ``store`` (``None``: none). ``running`` is
    true only while the process that wrote it is alive."""
    path = progress_path(store)
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    if data.get("running"):
        try:
            os.kill(int(data["pid"]), 0)
        except (OSError, ValueError, KeyError):
            data["running"] = False
            data["state"] = "stopped"
    return data


def _publish(store: Path, state: dict[str, Any]) -> None:
    """Write the run's progress beside the store. Watching never stops a run: a progress file
    the file system refuses (a full disk, a folder made read-only) is a warning, given once;
    the results still go to the store, which says itself when it cannot take them."""
    state["updated"] = time.time()
    try:
        atomic_text(progress_path(store), json.dumps(
            {k: v for k, v in state.items() if k != "_warned"}, indent=1))
    except OSError as exc:
        if not state.get("_warned"):
            state["_warned"] = True
            warnings.warn(f"the progress of this run cannot be written ({exc}); `recaudit "
                          "status` will not show it", RecauditWarning, stacklevel=2)


def run_study(study: Study, *, trials: Sequence[Trial] | None = None,
              progress: Callable[[str | None, int, int], None] | None = None) -> Path:
    """Run every trial of ``study`` its store does not hold yet; returns the store path.

    ``trials``: the study's plan when the caller has made it already. ``progress(trial_id,
    finished, total)`` is called once with ``None`` for the trials already stored, then after
    each trial. Interrupted (Ctrl-C, a kill), the store keeps every trial that had finished;
    running the same study again resumes (Ctrl-C and SIGTERM raise
    :class:`~recaudit.errors.Interrupted`, saying how many running trials were abandoned). A
    trial that fails raises :class:`~recaudit.errors.TrialError`, naming it; the run stops
    there (on Ray, once the other trials have finished), keeping the finished trials.
    """
    output = Path(study.output)
    trials = list(study.plan() if trials is None else trials)
    by_id = {t.id: t for t in trials}
    if len(by_id) != len(trials):
        raise RecauditError(f"{study.kind}: two planned trials share an id")
    facts = dict(study.facts())
    plan_id = spec_id({"kind": study.kind, "facts": facts.get("config", facts)})
    with Store(output) as store:
        store.ensure(*study.tables, PLANS)
        with store.transaction():
            for key, value in facts.items():
                store.set_meta(key, value)
            store.delete("plans", plan=plan_id)
            store.insert(PLANS, {"kind": [study.kind] * len(trials), "plan": [plan_id] * len(trials),
                                 "trial_id": list(by_id)})
        done = store.ids(study.tables[0]) & set(by_id)
        state = {"kind": study.kind, "store": str(output), "pid": os.getpid(),
                 "started": time.time(), "planned": len(trials), "done": len(done),
                 "running": True, "state": "running", "last": None}
        _publish(output, state)

        def write(store: Store, outcome: Any) -> str:
            with store.transaction():  # a result nobody planned is rolled back, never kept
                tid = study.write(store, outcome)
                if tid not in by_id:
                    raise RecauditError(f"a worker returned trial {tid}, which this "
                                        f"{study.kind} did not plan: its data differ from the "
                                        "driver's; run the same recaudit and data everywhere")
            return tid

        def report(tid: str | None, finished: int, total: int) -> None:
            state.update(done=finished, last=tid)
            _publish(output, state)
            if progress is not None:
                progress(tid, finished, total)

        jobs = [(t.id, (t,)) for t in trials]
        # heartbeats of the trials in flight (not on Ray: its workers may be elsewhere); a
        # killed run's are stale, and this run holds the store, so none is running
        clear_heartbeats(output)
        beats = None if study.executor.kind == "ray" else str(heartbeat_dir(output))
        try:
            run_pending(store, done, jobs, functools.partial(_call, study.run, beats),
                        study.executor, write,
                        group=(lambda job: job[0].group) if any(t.group for t in trials)
                        else None,
                        share=None if study.share is None else functools.partial(_call,
                                                                                 study.share,
                                                                                 None),
                        prime=None if study.prime is None else functools.partial(_call,
                                                                                 study.prime,
                                                                                 beats),
                        data=lambda job: job[0].datasets, progress=report)
        except BaseException as exc:
            state.update(running=False, state="interrupted" if isinstance(
                exc, KeyboardInterrupt) else "failed", error=f"{type(exc).__name__}: {exc}")
            _publish(output, state)
            raise
        state.update(running=False, state="finished")
        _publish(output, state)
        clear_heartbeats(output)
    return output
