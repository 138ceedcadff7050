"""Executors: where jobs run. In-process, a spawned process pool and Ray give the same numbers.

:func:`execute` calls a module-level function on each job's arguments (small, picklable specs,
never models or data; each worker loads and splits the data itself, memoised) and yields the
results as they finish. Scheduling by group: with ``group=``, the first job of every group runs
first and the rest of the group is released when it has finished (the audit groups trials by
baseline, so a baseline is trained once and read from the cache by the rest of its group). The
process pool takes a ``prime`` too: for each group of several jobs it runs ``prime(first job)``
(which leaves the group's product on the disk the workers share: the audit's baseline cache)
and releases the *whole* group when that returns, so every job of the group starts at once
instead of waiting for the first job's own work (a perturbed fit, a TracIn refit).

Workers of a pool are limited to ``threads_per_worker`` torch threads and get
``ExecutorSpec.devices`` round-robin (:func:`recaudit.models.set_process_device`).

Stopping: Ctrl-C (or SIGTERM, or any error) in the process that iterates over the results
stops the run at once: a pool's workers, which ignore SIGINT, are stopped by the driver
(:mod:`recaudit.experiment._stopping`: SIGTERM, a short grace, SIGKILL) and print nothing; the
executor raises :class:`~recaudit.errors.Interrupted` with the number of running jobs it
abandoned. A job that raises stops a pool the same way (the in-process executor stops there
too; Ray lets the others finish) and its error reaches the caller. A ``KeyboardInterrupt``
that hits the caller while it handles a result should be thrown into the generator
(``results.throw(exc)``), which then stops the same way.

On Ray (:mod:`recaudit.experiment._ray`) nothing goes through a file system: ``data`` names the
datasets a job reads, which the driver loads once and ships through Ray's object store, and
``share`` makes a group's product (the audit's baseline) once, as a task whose result each job of
the group receives as an extra last argument. The other executors ignore both: their jobs read
the data and the cached products themselves, on the one machine they share.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Generator, Hashable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from typing import Any

from recaudit.errors import Interrupted
from recaudit.experiment._schedule import Job, split_groups
from recaudit.experiment._specs import DatasetSpec, ExecutorSpec
from recaudit.experiment._stopping import in_job, sigint_ignored, stop_workers, worker_signals
from recaudit.experiment._threads import size_torch

__all__ = ["execute"]


def _call(fn: Callable[..., Any], args: Job, threads: int | None) -> Any:
    """Run ``fn(*args)`` in a worker, with ``threads`` torch intra-op threads if given."""
    with in_job():
        if threads is not None:
            size_torch(threads)
        return fn(*args)


def _init_worker(threads: int, devices: tuple[str, ...], counter: Any) -> None:
    """A pool worker's start: signals, memory, torch's threads and the worker's device.

    Torch is sized before any job, so every job of the worker computes with the same thread
    count (float sums depend on it), but not imported: :func:`size_torch` sizes it the moment
    a job imports it (:mod:`recaudit.experiment._threads`); a worker whose jobs never use torch
    starts 1.7 s sooner.
    """
    worker_signals()                 # the driver alone handles Ctrl-C and stops the workers
    from recaudit._memory import keep_freed_memory

    keep_freed_memory()              # a worker of ours: reuse freed blocks (recaudit._memory)
    size_torch(threads)
    if devices:
        from recaudit.models import set_process_device

        with counter.get_lock():
            worker = counter.value
            counter.value += 1
        set_process_device(devices[worker % len(devices)])


def execute(fn: Callable[..., Any], jobs: Sequence[Job], spec: ExecutorSpec, *,
            group: Callable[[Job], Hashable] | None = None,
            share: Callable[..., Any] | None = None,
            prime: Callable[..., Any] | None = None,
            data: Callable[[Job], Sequence[DatasetSpec]] | None = None,
            early: Callable[[Job], bool] | None = None
            ) -> Generator[Any, None, None]:
    """Run ``fn(*job)`` for every job and yield the results as they finish.

    The order of results depends on the executor (in-process: job order); the results do not.
    Ray only: ``share`` (module-level, with ``group``) makes each group's product, passed as
    ``fn(*job, product)``; ``data(job)`` lists the datasets to ship to the job's worker.
    Process pool only: ``prime`` (module-level, with ``group``) is called as
    ``prime(*first job)`` before a group of several jobs, which then all start together; its
    result is dropped (it leaves the product where the jobs find it). With ``early(job)``
    true for every job of a group (jobs that read the product only at their end and wait for
    it there) and two workers or more, the group starts with its priming instead of after it
    (a group of one job too: its product and its own work then run side by side).
    """
    jobs = list(jobs)
    if spec.kind == "inprocess":
        yield from _inprocess(fn, jobs, spec)
    elif spec.kind == "process":
        yield from _pool(fn, jobs, spec, group, prime,
                         early if spec.workers > 1 and prime is not None else None)
    else:
        from recaudit.experiment._ray import run_ray

        yield from run_ray(fn, jobs, spec, group, share, data)


def _inprocess(fn: Callable[..., Any], jobs: list[Job], spec: ExecutorSpec) -> Iterator[Any]:
    from recaudit.models import process_device, set_process_device

    before = process_device()

    if spec.devices:
        set_process_device(spec.devices[0])
    try:
        for job in jobs:  # the caller's process: its thread settings are left alone
            try:
                outcome = fn(*job)
            except KeyboardInterrupt as exc:
                raise Interrupted.of(exc, 1).with_traceback(exc.__traceback__) from None
            try:
                yield outcome
            except KeyboardInterrupt as exc:  # thrown in while the caller handled a result
                raise Interrupted.of(exc, 0) from None
    finally:
        if spec.devices:
            set_process_device(before)


def _scheduled(jobs: list[Job], group: Callable[[Job], Hashable] | None,
               submit: Callable[[Job], Any], wait_any: Callable[[set], set],
               result: Callable[[Any], Any],
               prime: Callable[[Job], Any] | None = None,
               early: Callable[[Job], bool] | None = None) -> Iterator[Any]:
    """Yield ``result(handle)`` of every job as it finishes. ``submit(job)`` starts a job and
    returns its handle, ``wait_any(handles)`` returns those finished; with ``prime(job)`` (which
    starts the group's priming and returns its handle; ``result`` is called on it too, for its
    errors, and dropped) a group of several jobs waits for its priming, then starts whole; a
    group whose every job is ``early`` starts whole with its priming."""
    first, rest = split_groups(jobs, group)
    pending: dict[Any, tuple[Hashable, bool]] = {}
    for job in first:
        key = group(job) if group else None
        members = [job, *rest.get(key, [])]
        if prime is not None and early is not None and all(early(j) for j in members):
            rest.pop(key, None)
            pending[prime(job)] = (key, True)
            for j in members:
                pending[submit(j)] = (key, False)
        elif prime is not None and rest.get(key):
            rest[key].insert(0, job)
            pending[prime(job)] = (key, True)
        else:
            pending[submit(job)] = (key, False)
    while pending:
        for fut in wait_any(set(pending)):
            key, primed = pending.pop(fut)
            outcome = result(fut)
            for job in rest.pop(key, []):
                pending[submit(job)] = (key, False)
            if not primed:
                yield outcome


def _pool(fn: Callable[..., Any], jobs: list[Job], spec: ExecutorSpec,
          group: Callable[[Job], Hashable] | None,
          prime: Callable[..., Any] | None = None,
          early: Callable[[Job], bool] | None = None) -> Iterator[Any]:
    """The process pool, surviving the death of a worker (the OOM killer's SIGKILL): the
    pool is replaced and the jobs not yet finished run again — up to ``spec.retries`` times,
    as on Ray; jobs are pure functions of their specs, so a retried one gives the numbers a
    clean run gives — with a warning that says what happened."""
    import warnings
    from concurrent.futures.process import BrokenProcessPool

    from recaudit.errors import RecauditError, RecauditWarning

    remaining = list(enumerate(jobs))
    for attempt in range(spec.retries + 1):
        finished: set[int] = set()
        once = _pool_once(fn, remaining, spec, group, prime, early)
        try:
            for i, outcome in once:
                finished.add(i)
                try:
                    yield outcome
                except KeyboardInterrupt as stop:  # thrown in: the pool stops, says what it
                    once.throw(stop)               # abandons (raises Interrupted)
                    raise
            return
        except BrokenProcessPool as exc:
            remaining = [(i, j) for i, j in remaining if i not in finished]
            if attempt == spec.retries:
                raise RecauditError(
                    f"a worker process died {attempt + 1} times ({exc}); "
                    f"{len(remaining)} jobs did not finish; the finished ones are saved: run "
                    "the same command again, with fewer --workers if memory ran out") \
                    from None
            warnings.warn(f"a worker process died (killed, or out of memory); the pool was "
                          f"replaced and {len(remaining)} unfinished jobs run again (retry "
                          f"{attempt + 1} of {spec.retries})", RecauditWarning, stacklevel=2)
        finally:
            once.close()


def _pool_once(fn: Callable[..., Any], jobs: list[tuple[int, Job]], spec: ExecutorSpec,
               group: Callable[[Job], Hashable] | None,
               prime: Callable[..., Any] | None,
               early: Callable[[Job], bool] | None = None
               ) -> Generator[tuple[int, Any], None, None]:
    import multiprocessing as mp

    ctx = mp.get_context("spawn")  # fork after torch/numba threads exist is unsafe
    counter = ctx.Value("i", 0)    # deals spec.devices to the workers round-robin
    index: dict[Future, int] = {}
    live: set[Future] = set()      # every job submitted (trials and primes), for the count
    pool = ProcessPoolExecutor(spec.workers, mp_context=ctx, initializer=_init_worker,
                               initargs=(spec.threads_per_worker, spec.devices, counter))

    def start(f: Callable[..., Any], job: Job) -> Future:
        growing = len(getattr(pool, "_processes", None) or ()) < spec.workers
        # a worker spawned here (the pool spawns one per submit until it is full) inherits
        # the ignored SIGINT
        with sigint_ignored() if growing else contextlib.nullcontext():
            fut = pool.submit(_call, f, job, spec.threads_per_worker)
        live.add(fut)
        return fut

    def submit(job: tuple[int, Job]) -> Future:
        fut = start(fn, job[1])
        index[fut] = job[0]
        return fut

    def wait_any(fs: set) -> set:
        return set(wait(fs, return_when=FIRST_COMPLETED)[0])

    def start_prime(job: tuple[int, Job]) -> Future:
        assert prime is not None
        return start(prime, job[1])

    by_group = None if group is None else (lambda job: group(job[1]))
    try:
        yield from _scheduled(jobs, by_group, submit, wait_any,
                              lambda f: (index.get(f), f.result()),
                              None if prime is None else start_prime,
                              None if early is None else (lambda job: early(job[1])))
    except BaseException as exc:  # Ctrl-C, SIGTERM, a failed job, the caller stopped
        workers = list((getattr(pool, "_processes", None) or {}).values())
        running = min(sum(f.running() for f in live), len(workers))
        stop_workers(workers)
        pool.shutdown(wait=False, cancel_futures=True)
        if isinstance(exc, KeyboardInterrupt):
            raise Interrupted.of(exc, running) from None
        raise
    pool.shutdown(wait=True)
