"""Stopping a process pool (``experiment/_stopping.py``, the executors' interrupt path): Ctrl-C
and failed jobs stop the workers at once, report what was abandoned, and lose nothing a
worker's ``finally`` must do."""

from __future__ import annotations

import multiprocessing as mp
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from recaudit.errors import Interrupted, TrialError
from recaudit.experiment import ExecutorSpec, execute
from recaudit.experiment import _stopping
from recaudit.experiment._stopping import deferred_signals, sigint_ignored, stop_workers


def _nap(folder, key, seconds):
    """A job: sleeps, and leaves ``<key>.<pid>.started`` while it runs, ``<key>.slept`` if
    its sleep ran to the end, ``<key>.unwound`` when its ``finally`` ran. The pid is in the
    name, so the mark appears whole in one step: a worker stopped while writing a pid into a
    file left it empty (seen on CI)."""
    path = Path(folder)
    try:  # marked started inside the try: an interrupt seen after the mark unwinds the job
        (path / f"{key}.{os.getpid()}.started").touch()
        time.sleep(seconds)
        (path / f"{key}.slept").touch()
    finally:
        (path / f"{key}.unwound").write_text("yes")
    return key


def _fails(folder, key, seconds):
    if seconds < 0:
        raise TrialError(f"job {key}", ValueError("broken"))
    return _nap(folder, key, seconds)


def _started(folder: Path, n: int, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while len(list(folder.glob("*.started"))) < n:
        assert time.monotonic() < deadline, "the workers never started their jobs"
        time.sleep(0.05)


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def _worker_pids(folder: Path) -> list[int]:
    return [int(p.name.split(".")[1]) for p in folder.glob("*.started")]


def test_a_process_spawned_in_the_block_ignores_sigint_and_the_handler_comes_back():
    probe = [sys.executable, "-c", "import signal; print(signal.getsignal(signal.SIGINT))"]
    before = signal.getsignal(signal.SIGINT)
    with sigint_ignored():
        inside = subprocess.run(probe, capture_output=True, text=True).stdout.strip()
    outside = subprocess.run(probe, capture_output=True, text=True).stdout.strip()
    assert signal.getsignal(signal.SIGINT) is before
    assert inside == str(int(signal.SIG_IGN))  # Python installed no KeyboardInterrupt handler
    assert outside == "<built-in function default_int_handler>"


def _stubborn(ready):
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    ready.set()
    time.sleep(600)


def test_stop_workers_kills_a_process_that_ignores_sigterm_after_the_grace():
    ctx = mp.get_context("spawn")
    ready = ctx.Event()
    proc = ctx.Process(target=_stubborn, args=(ready,))
    proc.start()
    assert ready.wait(60)
    t0 = time.monotonic()
    stop_workers([proc], grace=0.5)
    # it did not wait for the process's 600-s sleep (a bound a loaded machine keeps)
    assert time.monotonic() - t0 < 300
    proc.join(30)
    assert proc.exitcode == -signal.SIGKILL


@pytest.mark.slow
def test_ctrl_c_stops_busy_workers_at_once_and_lets_their_jobs_unwind(tmp_path, monkeypatch):
    # the grace is what a worker that does not unwind gets; here both unwind, and a loaded
    # machine (CI) once took more than the 2-s default to run one's ``finally``: this test is
    # about the unwinding, so the grace is long and the pool still stops as soon as both exit
    monkeypatch.setattr(_stopping, "GRACE", 120.0)
    jobs = [(str(tmp_path), f"j{i}", 120) for i in range(3)]
    results = execute(_nap, jobs, ExecutorSpec("process", workers=2))
    threading.Thread(target=lambda: (_started(tmp_path, 2), os.kill(os.getpid(),
                                                                     signal.SIGINT))).start()
    with pytest.raises(Interrupted) as info:
        list(results)
    assert not list(tmp_path.glob("*.slept"))  # the jobs' 120 s were not waited for
    assert info.value.abandoned == 2 and info.value.signum == signal.SIGINT
    assert info.value.exit_code == 130
    pids = _worker_pids(tmp_path)
    assert len(pids) == 2 and not any(_alive(p) for p in pids)
    # SIGTERM unwound each job before its worker exited: their finally blocks ran
    assert sorted(p.name for p in tmp_path.glob("*.unwound")) == ["j0.unwound", "j1.unwound"]


@pytest.mark.slow
def test_ctrl_c_while_the_caller_handles_a_result_still_counts_what_runs(tmp_path):
    """The caller (writing a result to the store) throws the interrupt into the executor."""
    jobs = [(str(tmp_path), "quick", 0), (str(tmp_path), "slow", 120)]
    results = execute(_nap, jobs, ExecutorSpec("process", workers=2))
    assert next(results) == "quick"
    _started(tmp_path, 2)
    with pytest.raises(Interrupted) as info:
        results.throw(KeyboardInterrupt())
    assert info.value.abandoned == 1
    assert not any(_alive(p) for p in _worker_pids(tmp_path))


@pytest.mark.slow
def test_a_failed_job_stops_the_pool_without_waiting_for_the_others(tmp_path):
    jobs = [(str(tmp_path), "slow", 120), (str(tmp_path), "bad", -1)]
    with pytest.raises(TrialError, match="job bad failed: ValueError: broken"):
        list(execute(_fails, jobs, ExecutorSpec("process", workers=2)))
    assert not (tmp_path / "slow.slept").exists()  # the other job's 120 s were not waited for
    assert not any(_alive(p) for p in _worker_pids(tmp_path))


def test_in_process_ctrl_c_reports_the_running_trial(tmp_path):
    threading.Thread(target=lambda: (_started(tmp_path, 1), os.kill(os.getpid(),
                                                                     signal.SIGINT))).start()
    with pytest.raises(Interrupted) as info:
        list(execute(_nap, [(str(tmp_path), "only", 30)], ExecutorSpec("inprocess")))
    assert info.value.abandoned == 1
    assert (tmp_path / "only.unwound").exists()


# ------------------------------------------------------------- finished work, written whole
def test_a_signal_during_a_deferred_block_acts_when_it_ends():
    order = []
    with pytest.raises(KeyboardInterrupt):
        with deferred_signals():
            signal.raise_signal(signal.SIGINT)   # held: the block goes on
            order.append("after the signal")
        order.append("not reached")
    assert order == ["after the signal"]
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # put back


def test_an_ignored_signal_stays_ignored_in_a_deferred_block():
    before = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        with deferred_signals():
            assert signal.getsignal(signal.SIGINT) == signal.SIG_IGN
            signal.raise_signal(signal.SIGINT)
        assert signal.getsignal(signal.SIGINT) == signal.SIG_IGN
    finally:
        signal.signal(signal.SIGINT, before)


def _interrupting_savez(monkeypatch, signum=signal.SIGINT):
    """``np.savez`` (what the cache writes an entry with) that receives ``signum`` when half
    its arrays are written: the moment a Ctrl-C lost a trained baseline."""
    import numpy as np

    real = np.savez

    def savez(file, **arrays):
        signal.raise_signal(signum)
        return real(file, **arrays)

    monkeypatch.setattr(np, "savez", savez)


def test_ctrl_c_while_a_baseline_is_cached_keeps_the_entry_then_interrupts(tmp_path,
                                                                           monkeypatch):
    import numpy as np

    from recaudit.experiment import ArrayCache

    cache = ArrayCache(tmp_path / "a.duckdb.baselines")
    items = np.arange(60, dtype=np.int64).reshape(6, 10)
    _interrupting_savez(monkeypatch)
    with pytest.raises(KeyboardInterrupt):
        cache.put("key", items=items, fit_seconds=np.asarray(12.5))
    monkeypatch.undo()
    got = cache.get("key")  # whole and verified (a damaged entry warns and reads as None)
    assert got is not None and np.array_equal(got["items"], items)
    assert not list((tmp_path / "a.duckdb.baselines").glob(".*.part"))


_WORKER_PUT = """
import signal, sys
import numpy as np
from recaudit.experiment import ArrayCache
from recaudit.experiment._stopping import in_job, worker_signals
real = np.savez
def savez(file, **arrays):
    signal.raise_signal(signal.SIGTERM)   # the driver stops its workers now
    return real(file, **arrays)
np.savez = savez
worker_signals()
with in_job():
    ArrayCache(sys.argv[1]).put("key", items=np.arange(12).reshape(3, 4))
    print("the job went on after SIGTERM", flush=True)
"""


def test_a_stopped_worker_writes_the_baseline_it_finished_before_it_exits(tmp_path):
    """A pool's worker gets SIGTERM when the run stops; writing a baseline then, it finishes
    the write and exits as a stopped worker does (143), without going on with its job."""
    import numpy as np

    from recaudit.experiment import ArrayCache

    run = subprocess.run([sys.executable, "-c", _WORKER_PUT, str(tmp_path / "cache")],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 128 + signal.SIGTERM, run.stderr
    assert "went on" not in run.stdout and "Traceback" not in run.stderr
    got = ArrayCache(tmp_path / "cache").get("key")
    assert got is not None and np.array_equal(got["items"], np.arange(12).reshape(3, 4))
