"""Executors: where trials run. All three give identical numbers for the same audit.

Trials are shipped as :class:`TrialSpec` objects (small, picklable), never as models or data;
each worker loads and splits the data itself (memoised) and reads shared baselines from the
on-disk cache. Scheduling: the first trial of every baseline group (same dataset, split, model,
seed) runs first; the rest of a group is released when its baseline is cached, so no baseline
is trained twice.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from typing import Any

from recaudit.audit._runner import TrialOutcome, run_trial
from recaudit.audit._spec import ExecutorSpec, TrialSpec

__all__ = ["execute"]

Job = tuple[TrialSpec, str]  # (trial, baseline key)


def _groups(jobs: list[Job]) -> tuple[list[Job], dict[str, list[Job]]]:
    first: list[Job] = []
    rest: dict[str, list[Job]] = {}
    seen: set[str] = set()
    for job in jobs:
        if job[1] in seen:
            rest.setdefault(job[1], []).append(job)
        else:
            seen.add(job[1])
            first.append(job)
    return first, rest


def execute(jobs: list[Job], spec: ExecutorSpec, *, audit: str, cache_dir: str,
            ) -> Iterator[TrialOutcome]:
    """Run ``jobs`` and yield outcomes as they finish (order depends on the executor)."""
    if spec.kind == "inprocess":
        from recaudit.models import set_process_device
        from recaudit.models._nn import _PROCESS_DEVICE as before

        if spec.devices:
            set_process_device(spec.devices[0])
        try:
            for trial, _ in jobs:  # the caller's process: its thread settings are left alone
                yield run_trial(trial, audit=audit, cache_dir=cache_dir)
        finally:
            if spec.devices:
                set_process_device(before)
    elif spec.kind == "process":
        yield from _pool(jobs, spec, audit, cache_dir)
    else:
        yield from _ray(jobs, spec, audit, cache_dir)


def _init_worker(threads: int, devices: tuple[str, ...], counter) -> None:
    import torch

    torch.set_num_threads(threads)
    try:
        torch.set_num_interop_threads(1)
    except RuntimeError:
        pass  # already set in this process: interop threads can only be set once
    if devices:
        from recaudit.models import set_process_device

        with counter.get_lock():
            worker = counter.value
            counter.value += 1
        set_process_device(devices[worker % len(devices)])


def _scheduled(jobs: list[Job], submit: Callable[[TrialSpec], Any],
               wait_any: Callable[[set], tuple[set, set]], result: Callable[[Any], TrialOutcome]
               ) -> Iterator[TrialOutcome]:
    first, rest = _groups(jobs)
    pending: dict[Any, str] = {submit(t): key for t, key in first}
    while pending:
        done, _ = wait_any(set(pending))
        for fut in done:
            key = pending.pop(fut)
            outcome = result(fut)
            for trial, k in rest.pop(key, []):
                pending[submit(trial)] = k
            yield outcome


def _pool(jobs: list[Job], spec: ExecutorSpec, audit: str, cache_dir: str
          ) -> Iterator[TrialOutcome]:
    import multiprocessing as mp

    ctx = mp.get_context("spawn")  # fork after torch/numba threads exist is unsafe
    counter = ctx.Value("i", 0)    # deals spec.devices to the workers round-robin
    with ProcessPoolExecutor(spec.workers, mp_context=ctx, initializer=_init_worker,
                             initargs=(spec.threads_per_worker, spec.devices, counter)) as pool:
        def submit(trial: TrialSpec) -> Future:
            return pool.submit(run_trial, trial, audit=audit, cache_dir=cache_dir,
                               threads=spec.threads_per_worker)

        def wait_any(fs: set) -> tuple[set, set]:
            done, not_done = wait(fs, return_when=FIRST_COMPLETED)
            return set(done), set(not_done)

        yield from _scheduled(jobs, submit, wait_any, lambda f: f.result())


def _ray(jobs: list[Job], spec: ExecutorSpec, audit: str, cache_dir: str
         ) -> Iterator[TrialOutcome]:
    try:
        import ray
    except ImportError:
        from recaudit.errors import ConfigError

        raise ConfigError("executor.kind = 'ray' needs the optional extra: "
                          "pip install 'recaudit[ray]'") from None
    started = False
    if not ray.is_initialized():
        kwargs: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False}
        if spec.address:
            kwargs["address"] = spec.address
        else:
            kwargs["num_cpus"] = spec.workers
        ray.init(**kwargs)
        started = True
    try:
        remote = ray.remote(num_cpus=1)(run_trial)

        def submit(trial: TrialSpec) -> Any:
            return remote.remote(trial, audit=audit, cache_dir=cache_dir,
                                 threads=spec.threads_per_worker)

        def wait_any(refs: set) -> tuple[set, set]:
            done, not_done = ray.wait(list(refs), num_returns=1)
            return set(done), set(not_done)

        yield from _scheduled(jobs, submit, wait_any, ray.get)
    finally:
        if started:
            ray.shutdown()
