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
- ``run_stack`` (optional) — a module-level function that runs several jobs of one group
  together and returns their outcomes in order (the audit trains them as one stacked model);
  :func:`run_study` uses it when ``executor.stack > 1``: the pending trials of each group are
  cut into stacks of at most ``stack`` trials, each stack one job of the executor;
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
import logging
import json
import os
import time
import warnings
from collections.abc import Callable, Mapping, Sequence
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Protocol

from recaudit import _progress, _resume
from recaudit._files import atomic_text
from recaudit._ids import spec_id
from recaudit.errors import (RecauditError, RecauditWarning, StorageError, TrialError,
                             storage_error)
from recaudit.experiment._heartbeat import (Heartbeat, clear_heartbeats, fits_dir,
                                           heartbeat_dir)
from recaudit.experiment._run import Stacked, run_pending
from recaudit.experiment._schema import PLANS, Table
from recaudit.experiment._specs import DatasetSpec, ExecutorSpec
from recaudit.experiment._store import Store

log = logging.getLogger(__name__)

__all__ = ["Trial", "Study", "StudyInfo", "Stacked", "run_study", "stacks", "progress_path",
           "read_progress"]


@dataclass(frozen=True)
class Trial:
    """One planned trial: ``id`` (its key in the store), ``job`` (what the study's ``run``
    function receives; small and picklable), ``group`` (trials of a group share a product:
    the first runs first, the rest after it), ``datasets`` (what it reads, shipped to Ray
    workers), ``label`` (how messages name it: model, perturbation, seed; default its id),
    ``early`` (its run reads the group's product only at its end and waits for it there: a
    process pool starts it with the group's priming, :func:`~recaudit.experiment.execute`)."""

    id: str
    job: Any
    group: str | None = None
    datasets: tuple[DatasetSpec, ...] = ()
    label: str = ""
    early: bool = False

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
    # optional: run_stack(jobs, *product) -> outcomes (see the module docstring)


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


def _call(run: Callable[..., Any], beats: str | None, fits: str | None,
          trial: Trial | list[Trial], *product: Any, tag: str = "", keep: bool = False
          ) -> Any:
    """A worker runs ``trial`` (keeping its heartbeat in ``beats``, a folder, if given, and the
    state of its fits in ``fits``, :func:`recaudit._resume.resumable`; ``keep``: finished fits'
    too, ``[executor] keep_fits``); an error it raises
    becomes a :class:`~recaudit.errors.TrialError` naming the trial (the error its cause). A
    stack (a list of trials: only ``share``/``prime`` are called on one) stands for its
    first. ``tag``: the heartbeat's name beside the trial's id (a group's priming runs
    beside its first trial: ``<id>.prime``)."""
    if isinstance(trial, list):
        trial = trial[0]
    try:
        with _resume.resumable(fits, keep_finished=keep):
            if beats is None:
                return run(trial.job, *product)
            with Heartbeat(beats, f"{trial.id}.{tag}" if tag else trial.id):
                return run(trial.job, *product)
    except (TrialError, StorageError):  # a full disk is not the trial's fault: say where
        raise
    except Exception as exc:
        raise (storage_error(exc, writing=False) or TrialError(trial.name, exc)) from exc


def _call_stack(run_stack: Callable[..., Any], beats: str | None, fits: str | None,
                trials: list[Trial], *product: Any, keep: bool = False) -> Stacked:
    """A worker runs a stack of trials with ``run_stack`` (one heartbeat per trial: what a
    member reports inside :func:`recaudit._progress.member` reaches its own, the rest all)."""
    try:
        with _resume.resumable(fits, keep_finished=keep):
            return _run_stack(run_stack, beats, trials, *product)
    except (TrialError, StorageError):
        raise
    except Exception as exc:
        name = f"{trials[0].name} (in a stack of {len(trials)})" if len(trials) > 1 \
            else trials[0].name
        raise (storage_error(exc, writing=False) or TrialError(name, exc)) from exc


def _run_stack(run_stack: Callable[..., Any], beats: str | None, trials: list[Trial],
               *product: Any) -> Stacked:
    if beats is None:
        return Stacked(run_stack([t.job for t in trials], *product))
    with ExitStack() as stack:
        hearts = [stack.enter_context(Heartbeat(beats, t.id)) for t in trials]
        for i, heart in enumerate(hearts):
            heart({"stack": {"size": len(trials), "index": i, "first": trials[0].id}})

        def dispatch(fields: Mapping[str, Any]) -> None:
            fields = dict(fields)
            who = fields.pop("member", None)
            for i, heart in enumerate(hearts):
                if who is None or who == i:
                    heart(fields)

        stack.enter_context(_progress.reporting(dispatch))
        return Stacked(run_stack([t.job for t in trials], *product))


def _datasets(unit: Trial | list[Trial]) -> tuple[DatasetSpec, ...]:
    """The datasets a trial or a stack of trials reads, each once."""
    out: list[DatasetSpec] = []
    for t in unit if isinstance(unit, list) else [unit]:
        out.extend(d for d in t.datasets if d not in out)
    return tuple(out)


def stacks(trials: Sequence[Trial], size: int) -> list[list[Trial]]:
    """``trials`` cut into stacks of at most ``size`` trials of one group each (in plan order;
    a trial without a group is a stack of its own)."""
    by_group: dict[Any, list[list[Trial]]] = {}
    out: list[list[Trial]] = []
    for t in trials:
        if t.group is None:
            out.append([t])
            continue
        open_ = by_group.setdefault(t.group, [])
        if not open_ or len(open_[-1]) >= size:
            open_.append([t])
            out.append(open_[-1])
        else:
            open_[-1].append(t)
    return out


def _reidentify(study: Study, store: Store) -> None:
    """A store written under older identity rules (:mod:`recaudit.experiment._identity`) gets
    its trial ids rewritten before the run compares them with the plan, when the study says
    how (``reidentify(row) -> id``); the store then records the current version."""
    from recaudit.experiment import _identity

    reidentify = getattr(study, "reidentify", None)
    if reidentify is None:
        return
    version = _identity.ID_VERSION
    if study.tables[0].name in store.tables() and _identity.store_id_version(store) < version:
        changed = _identity.migrate_ids(store, study.tables, reidentify, version)
        log.warning("%s: trial ids of %d stored trials rewritten for identity version %d",
                    study.output, len(changed), version)
    elif store.meta().get("trial_id_version") != version:
        store.set_meta("trial_id_version", version)


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
        _reidentify(study, store)
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

        # heartbeats of the trials in flight (not on Ray: its workers may be elsewhere); a
        # killed run's are stale, and this run holds the store, so none is running
        clear_heartbeats(output)
        beats = None if study.executor.kind == "ray" else str(heartbeat_dir(output))
        fits = None if beats is None else str(fits_dir(output))
        keep = study.executor.keep_fits
        run_stack = getattr(study, "run_stack", None)
        size = study.executor.stack
        if size > 1 and run_stack is not None:
            units = stacks([t for t in trials if t.id not in done], size)
            jobs: list[tuple[Any, tuple]] = [(tuple(t.id for t in u), (u,)) for u in units]
            runner = functools.partial(_call_stack, run_stack, beats, fits, keep=keep)
        else:
            jobs = [(t.id, (t,)) for t in trials]
            runner = functools.partial(_call, study.run, beats, fits, keep=keep)

        def unit(job: tuple) -> Trial:
            return job[0][0] if isinstance(job[0], list) else job[0]

        try:
            run_pending(store, done, jobs, runner, study.executor, write,
                        group=(lambda job: unit(job).group) if any(t.group for t in trials)
                        else None,
                        share=None if study.share is None else functools.partial(_call,
                                                                                 study.share,
                                                                                 None, None),
                        prime=None if study.prime is None else functools.partial(
                            _call, study.prime, beats, fits, tag="prime", keep=keep),
                        data=lambda job: _datasets(job[0]),
                        early=lambda job: not isinstance(job[0], list) and job[0].early,
                        progress=report, total=len(trials))
        except BaseException as exc:
            state.update(running=False, state="interrupted" if isinstance(
                exc, KeyboardInterrupt) else "failed", error=f"{type(exc).__name__}: {exc}")
            _publish(output, state)
            raise
        state.update(running=False, state="finished")
        _publish(output, state)
        clear_heartbeats(output)
    return output
