"""The Ray executor: jobs on one machine or a cluster, without a shared file system.

What travels how (the *driver* is the process that runs the study and writes the store):

- **datasets**: the driver loads every dataset the jobs read once (memoised
  :func:`~recaudit.experiment.load_dataset`), puts it into Ray's object store and passes the
  reference to every task that reads it. Ray copies an object to a node once; the node's workers
  read it zero-copy from shared memory and install it (:func:`install_dataset` checks its
  fingerprint against the driver's), so a worker never reads data from its own disk.
- **shared products** (the audit's baselines): with ``group`` and ``share``, ``share(*job)`` of
  the first job of a group runs once, as a task of its own. Its result stays in the object store
  of the node that made it; every job of the group gets the reference as its last argument, so
  Ray starts the job once the product exists and fetches it to the job's node (Ray's scheduler
  prefers the node that already holds a task's arguments). The driver never fetches it, and
  drops its reference when the group's last job has finished, so the object store holds the
  products of the groups in progress only.
- **results**: the return value of each job (an audit trial: its row and per-query rows, computed
  where the rank lists are) is all that comes back to the driver.

Resources: a task reserves ``threads_per_worker`` CPUs (and runs that many torch threads) and
``gpus_per_trial`` GPUs; a fraction packs ``floor(1 / gpus_per_trial)`` tasks on a GPU. Ray
exposes the assigned GPU through ``CUDA_VISIBLE_DEVICES`` and the task's models with device
``auto`` train on it (:func:`gpu_device`); tasks without GPUs train on the CPU. Ray ends a
worker process after each GPU task (its default), so every GPU trial starts with a fresh CUDA
context.

Failures: a task whose worker process or node dies is run again, up to ``retries`` times
(lineage reconstruction also re-makes a shared product lost with its node). An error raised by a
job itself is not retried: the executor stops nothing that is running, yields every result that
still arrives (so no finished trial is lost), does not start the held-back rest of a failed
first job's group, and raises the first error at the end. Closing the generator (the caller stopped) cancels what
has not finished; so does Ctrl-C (:class:`~recaudit.errors.Interrupted`, with the number of
jobs in flight).
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Callable, Hashable, Iterator, Sequence
from typing import Any

from recaudit.errors import ConfigError, Interrupted, RecauditError
from recaudit.experiment._schedule import Job, split_groups
from recaudit.experiment._specs import DatasetSpec, ExecutorSpec

__all__ = ["run_ray", "gpu_device", "task_options"]

log = logging.getLogger(__name__)



def gpu_device(assigned: Sequence[int | str], visible: str | None) -> str:
    """The torch device of the first GPU Ray ``assigned`` to a task, given the process's
    ``CUDA_VISIBLE_DEVICES`` (``visible``): CUDA numbers the visible GPUs from 0, so the device
    is the assigned id's position in that list (Ray sets it to the assigned ids: ``cuda:0``);
    with nothing hidden (``None``) it is the id itself."""
    if not assigned:
        raise RecauditError("Ray assigned no GPU to a task that reserved gpus_per_trial > 0")
    first = str(assigned[0]).strip()
    if visible is None:
        return f"cuda:{first}"
    ids = [v.strip() for v in visible.split(",") if v.strip()]
    if first not in ids:
        raise RecauditError(f"Ray assigned GPU {first} but CUDA_VISIBLE_DEVICES={visible!r} "
                            "hides it from this process")
    return f"cuda:{ids.index(first)}"


def task_options(spec: ExecutorSpec) -> dict[str, Any]:
    """Ray options of every task of ``spec``: resources and retries on worker or node death."""
    opts: dict[str, Any] = {"num_cpus": spec.threads_per_worker, "max_retries": spec.retries,
                            "retry_exceptions": False}
    if spec.gpus_per_trial:
        opts["num_gpus"] = spec.gpus_per_trial
    return opts


def _setup(threads: int, gpus: float) -> None:
    """Per task, in the worker: torch threads and the device of ``auto`` models."""
    import ray

    from recaudit.experiment._threads import size_torch
    from recaudit.models import set_process_device

    size_torch(threads)
    if gpus:
        set_process_device(gpu_device(ray.get_gpu_ids(),
                                      os.environ.get("CUDA_VISIBLE_DEVICES")))
    else:
        set_process_device("cpu")  # no GPU reserved: do not use one


def _task(fn: Callable[..., Any], job: Job, threads: int, gpus: float, shared: bool,
          *args: Any) -> Any:
    """A job in a Ray worker. ``args``: the group's product (when ``shared``), then the
    ``(spec json, fingerprint, log)`` payloads of the datasets it reads (Ray resolves top-level
    references before the call)."""
    from recaudit.experiment._data import install_dataset

    _setup(threads, gpus)
    payloads = args[1:] if shared else args
    for key, fingerprint, data in payloads:
        install_dataset(key, data, fingerprint)
    return fn(*job, args[0]) if shared else fn(*job)


def _connect(ray: Any, spec: ExecutorSpec) -> bool:
    """Join ``spec.address`` or start a local cluster; ``True`` when this call started Ray."""
    if ray.is_initialized():
        return False
    kwargs: dict[str, Any] = {"log_to_driver": False}
    if spec.address:
        kwargs["address"] = spec.address
    else:
        _check_python_path()
        kwargs.update(num_cpus=spec.workers * spec.threads_per_worker, include_dashboard=False)
    ray.init(**kwargs)
    return True


def _check_python_path() -> None:
    """A local Ray cluster starts its workers with this Python; Ray's node manager runs that
    command through a shell without quoting it, so from a path with a space no worker ever
    starts and the run waits for ever (seen: ``/tmp/a b/.venv/bin/python`` -> ``/tmp/a: No
    such file or directory`` in the raylet's log). Said before Ray starts."""
    if " " in sys.executable:
        raise ConfigError(f"Ray cannot start its worker processes from a Python whose path "
                          f"contains a space ({sys.executable}): the run would wait for ever; "
                          "move the virtual environment to a path without spaces, or use "
                          "another executor (kind = \"process\")", key="executor.kind")


def _check_feasible(ray: Any, spec: ExecutorSpec) -> None:
    """Fail now, not never: some live node must have a trial's CPUs and GPUs."""
    nodes = [n.get("Resources", {}) for n in ray.nodes() if n.get("Alive")]
    need = {"CPU": spec.threads_per_worker, "GPU": spec.gpus_per_trial}
    if any(all(r.get(k, 0) >= v for k, v in need.items()) for r in nodes):
        return
    key = "gpus_per_trial" if spec.gpus_per_trial else "threads_per_worker"
    have = ", ".join(f"{r.get('CPU', 0):g} CPU/{r.get('GPU', 0):g} GPU" for r in nodes)
    raise ConfigError(f"no node of the Ray cluster can run a trial needing "
                      f"{need['CPU']} CPU and {need['GPU']:g} GPU (nodes: {have or 'none'})",
                      key=key)


def _put_datasets(ray: Any, jobs: list[Job], data: Callable[[Job], Sequence[DatasetSpec]] | None
                  ) -> dict[str, Any]:
    from recaudit.experiment._data import load_dataset
    from recaudit._ids import canonical_json

    refs: dict[str, Any] = {}
    if data is None:
        return refs
    for job in jobs:
        for spec in data(job):
            key = canonical_json(spec)
            if key not in refs:
                log_ = load_dataset(spec)
                refs[key] = ray.put((key, log_.fingerprint(), log_))
    return refs


def run_ray(fn: Callable[..., Any], jobs: list[Job], spec: ExecutorSpec,
            group: Callable[[Job], Hashable] | None,
            share: Callable[..., Any] | None = None,
            data: Callable[[Job], Sequence[DatasetSpec]] | None = None) -> Iterator[Any]:
    """Run ``fn(*job)`` (``fn(*job, product)`` with ``share``) on Ray; yield results as they
    finish (see the module docstring)."""
    try:
        import ray
    except ImportError:
        raise ConfigError("executor.kind = 'ray' needs the optional extra: "
                          "pip install 'recaudit[ray]'") from None
    from recaudit._ids import canonical_json

    started = _connect(ray, spec)
    pending: dict[Any, Hashable] = {}
    products: dict[Hashable, Any] = {}
    try:
        _check_feasible(ray, spec)
        task = ray.remote(_task).options(**task_options(spec))
        payloads = _put_datasets(ray, jobs, data)
        setup = (spec.threads_per_worker, spec.gpus_per_trial)

        def submit(job: Job) -> Any:
            refs = [] if data is None else [payloads[canonical_json(d)] for d in data(job)]
            if share is None or group is None:
                return task.remote(fn, job, *setup, False, *refs)
            key = group(job)
            if key not in products:
                products[key] = task.remote(share, job, *setup, False, *refs)
            return task.remote(fn, job, *setup, True, products[key], *refs)

        # With a product, Ray orders a group itself; without, the driver holds back the rest
        # of a group until its first job has finished (as the process pool does).
        first, rest = split_groups(jobs, group if share is None else None)
        users: dict[Hashable, int] = {}  # jobs still to finish per shared product
        for job in first:
            key = group(job) if group else None
            pending[submit(job)] = key
            users[key] = users.get(key, 0) + 1
        failures: list[BaseException] = []
        while pending:
            ready, _ = ray.wait(list(pending), num_returns=1)
            key = pending.pop(ready[0])
            users[key] -= 1
            if not users[key]:  # the last job of its group: the product may leave the store
                products.pop(key, None)
            try:
                result = ray.get(ready[0])
            except Exception as exc:  # the job's own error, or retries exhausted
                failures.append(exc)
                log.error("a job failed on Ray: %s", exc)
                rest.pop(key, None)
                continue
            for job in rest.pop(key, []):
                pending[submit(job)] = key
                users[key] += 1
            yield result
        if failures:
            log.error("%d job(s) failed; the results that arrived were kept", len(failures))
            raise failures[0]
    except KeyboardInterrupt as exc:  # Ctrl-C, SIGTERM: what was in flight is cancelled
        raise Interrupted.of(exc, len(pending)) from None
    finally:
        for ref in [*pending, *products.values()] if pending else []:
            try:
                ray.cancel(ref)
            except Exception:  # finished, or the cluster is gone
                log.debug("could not cancel %s", ref)
        if started:
            ray.shutdown()
