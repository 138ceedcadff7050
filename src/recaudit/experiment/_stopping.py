"""Stopping a process pool at once and without a word: Ctrl-C, SIGTERM, a failed trial.

Ctrl-C in a terminal sends SIGINT to the whole foreground process group: the driver *and* every
worker. A worker that reacted itself would print a ``KeyboardInterrupt`` traceback (or
``Exception in initializer`` while it imports torch), and the pool, seeing workers die, would
replace them and start the jobs again. So the driver alone decides:

- workers ignore SIGINT from the moment they exist: the driver spawns them with SIGINT ignored
  (:func:`sigint_ignored`; a spawned process inherits an ignored signal, and Python then
  installs no ``KeyboardInterrupt`` handler in it, so a Ctrl-C while a worker imports torch
  prints nothing), and :func:`worker_signals` keeps it so;
- a worker ends on SIGTERM without a word: idle, it exits at once; inside a job
  (:func:`in_job`), the job is unwound first, so its ``finally`` blocks run (a command model
  kills the program it started, temporary files and the trial's heartbeat go), then it exits;
- the driver, interrupted or failing, stops its workers (:func:`stop_workers`): SIGTERM, up to
  ``grace`` seconds for the jobs to unwind, then SIGKILL for any worker still alive. The
  trials those workers were running are abandoned; the finished ones are in the store.

Finished work is written whole whatever the signal's moment (:func:`deferred_signals`): a
baseline's lists going into the cache (in a worker, or in the driver when trials run in its
process) and a trial's rows going into the store hold SIGINT and SIGTERM until the write is
done. Unheld, the signal's exception unwinds the write halfway: the cache entry's temporary
file is removed (the baseline, trained for minutes, is trained again on resume), and a store
write is rolled back; worse, DuckDB runs the signal's handler during a query and replaces its
exception with its own error (``RuntimeError: Query interrupted``), so the run ended as a
failure (exit 1) instead of an interrupt.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import time
from collections.abc import Iterable, Iterator
from typing import Any

__all__ = ["deferred_signals", "in_job", "sigint_ignored", "stop_workers", "worker_signals"]

#: Seconds a stopped worker has to unwind its job before it is killed. Waited for only by a
#: worker that has not exited by then: one in a long C call (Python runs the handler when the
#: call returns) or on a loaded machine, where 2 s was once too short for a job's ``finally``
#: (CI). A worker killed there leaves its command model's program running and its temporary
#: files behind, so the grace is generous; it stays under the CLI's ``_STOPPING`` window, in
#: which a second Ctrl-C is dropped.
GRACE = 8.0

_IN_JOB = False


class _Stop(BaseException):
    """Raised inside a worker's job by SIGTERM: unwinds the job (not an ``Exception``, so no
    ``except Exception`` in a model swallows it)."""


def _on_term(signum: int, frame: Any) -> None:
    if _IN_JOB:
        raise _Stop
    os._exit(128 + signum)


def worker_signals() -> None:
    """In a worker process: ignore SIGINT (the driver handles Ctrl-C), end quietly on
    SIGTERM (see the module docstring)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, _on_term)


@contextlib.contextmanager
def in_job() -> Iterator[None]:
    """In a worker: the block is a job, which SIGTERM unwinds before the worker exits."""
    global _IN_JOB
    _IN_JOB = True
    try:
        yield
    except _Stop:
        os._exit(128 + signal.SIGTERM)
    finally:
        _IN_JOB = False


@contextlib.contextmanager
def sigint_ignored() -> Iterator[None]:
    """Ignore SIGINT in this process while the block runs (it spawns workers, which inherit
    the ignored signal), then put the handler back. Outside the main thread (where Python
    handles no signal) a no-op.

    A Ctrl-C that arrives during the block is lost: a blocked signal cannot be held back
    for later, as the kernel hands a process's signal to any thread that does not block it,
    which drops it when it is ignored. The block lasts as long as ``fork`` and ``exec`` (a
    few milliseconds, once per worker); a second Ctrl-C then stops the run."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.getsignal(signal.SIGINT)
    if previous is None:  # a handler Python did not install: it cannot be put back
        yield
        return
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


@contextlib.contextmanager
def deferred_signals() -> Iterator[None]:
    """Finish the block before SIGINT or SIGTERM act: one that arrives during it is held and
    raised again, to the handler in place before, when the block ends (whether it ended
    normally or by an error; the signal's exception then wins). For writes of finished work
    (module docstring), which take milliseconds: the interrupt is late by no more.

    A signal the process ignores stays ignored. Outside the main thread (where Python runs no
    handler) a no-op."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    held: list[int] = []
    previous: dict[int, Any] = {}
    for sig in (signal.SIGINT, signal.SIGTERM):
        handler = signal.getsignal(sig)
        if handler not in (signal.SIG_IGN, None):  # None: a handler Python cannot put back
            previous[sig] = signal.signal(sig, lambda got, _: held.append(got))
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        for signum in dict.fromkeys(held):
            signal.raise_signal(signum)  # the handler runs now, in this thread


def stop_workers(processes: Iterable[Any], grace: float | None = None) -> None:
    """Stop worker ``processes`` (:class:`multiprocessing.Process`): SIGTERM, then SIGKILL for
    those still alive after ``grace`` seconds (default :data:`GRACE`, read at the call).
    Returns when every one has exited (waits on their sentinels, so it does not compete with
    the pool for reaping them): a grace is waited for only by a worker that does not unwind."""
    grace = GRACE if grace is None else grace
    from multiprocessing.connection import wait

    live = {}
    for p in processes:
        with contextlib.suppress(OSError, ValueError, AttributeError):
            if p.exitcode is None:
                p.terminate()
                live[p.sentinel] = p
    deadline = time.monotonic() + grace
    while live and (left := deadline - time.monotonic()) > 0:
        for sentinel in wait(list(live), timeout=left):
            live.pop(sentinel)
    for p in live.values():
        with contextlib.suppress(OSError, ValueError, AttributeError):
            p.kill()
    if live:
        wait(list(live), timeout=grace)
