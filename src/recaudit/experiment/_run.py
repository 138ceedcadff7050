"""Running the trials of a study that its store does not hold yet (resume by id)."""

from __future__ import annotations

import logging
from collections.abc import Callable, Hashable, Sequence
from typing import TYPE_CHECKING, Any

from recaudit.experiment._stopping import deferred_signals

if TYPE_CHECKING:
    from recaudit.experiment._schedule import Job
    from recaudit.experiment._specs import DatasetSpec, ExecutorSpec
    from recaudit.experiment._store import Store

__all__ = ["run_pending", "Stacked"]


class Stacked(list):
    """The outcomes of a stack of trials, in the stack's order (each written on its own)."""

log = logging.getLogger(__name__)


def run_pending(store: Store, done: set[str], planned: Sequence[tuple[str | tuple[str, ...], Job]],
                fn: Callable[..., Any], executor: ExecutorSpec,
                write: Callable[[Store, Any], str], *,
                group: Callable[[Job], Hashable] | None = None,
                share: Callable[..., Any] | None = None,
                prime: Callable[..., Any] | None = None,
                data: Callable[[Job], Sequence[DatasetSpec]] | None = None,
                progress: Callable[[str | None, int, int], None] | None = None,
                total: int | None = None,
                early: Callable[[Job], bool] | None = None) -> int:
    """Run ``fn(*job)`` for every planned ``(trial id, job)`` whose id is not in ``done``,
    write each result with ``write(store, result)`` (which returns the result's trial id) as
    it arrives, and report ``progress(trial_id, finished, total)`` (first with ``None`` for the
    trials already done). A stack of trials is planned as ``(ids, job)`` and its result is a
    list (``Stacked``) whose outcomes are written one by one; ``total``: the number of trials
    planned (default: one per planned entry). ``group``, ``share``, ``prime``, ``data`` and
    ``early`` go to :func:`~recaudit.experiment.execute`. Returns the number of trials run.

    Consistency: each result is written in one transaction as soon as it arrives, so a driver
    killed at any moment keeps every trial it had received and none half; writes replace by
    trial id, so a trial that arrives twice (a retried task) is stored once. A Ctrl-C or
    SIGTERM during a write acts once the trial is written (a finished trial is kept:
    :func:`~recaudit.experiment._stopping.deferred_signals`).

    Interrupted (Ctrl-C, SIGTERM: a ``KeyboardInterrupt``), it raises
    :class:`~recaudit.errors.Interrupted` with the number of running jobs (trials, or stacks
    of trials) it abandoned, once the executor has stopped them; the finished ones are
    stored."""
    def ids(key: str | tuple[str, ...]) -> tuple[str, ...]:
        return key if isinstance(key, tuple) else (key,)

    pending = [(key, job) for key, job in planned if not set(ids(key)) <= done]
    jobs = [job for _, job in pending]
    to_run = sum(len(ids(key)) for key, _ in pending)
    total = len(planned) if total is None else total
    finished = total - to_run
    if progress:
        progress(None, finished, total)
    log.info("%d of %d trials to run (%d already stored)", to_run, total, finished)
    from recaudit.experiment._executors import execute  # not imported by a store's readers

    results = execute(fn, jobs, executor, group=group, share=share, prime=prime, data=data,
                      early=early)
    try:
        for result in results:
            try:
                for outcome in (result if isinstance(result, Stacked) else [result]):
                    with deferred_signals():
                        tid = write(store, outcome)
                    finished += 1
                    if progress:
                        progress(tid, finished, total)
            except KeyboardInterrupt as exc:
                # the executor stops its workers and says how many running trials it abandons
                results.throw(exc)
                raise
    finally:
        results.close()  # whatever stopped the loop, the workers stop now
    return to_run
