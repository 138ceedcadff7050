"""A pool worker's start in a process of its own, importing no more than a worker does (the
test module imports torch: each spawned process unpickling a function of it paid for that)."""

from recaudit.experiment._executors import _init_worker


def report_device(devices, counter, queue):
    from recaudit.models import process_device

    _init_worker(1, devices, counter)
    queue.put(process_device())
