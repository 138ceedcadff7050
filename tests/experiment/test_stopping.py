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
from recaudit.experiment._stopping import sigint_ignored, stop_workers


def _nap(folder, key, seconds):
    """A job: sleeps, and leaves ``<key>.<pid>.started`` while it runs, ``<key>.unwound`` when
    its ``finally`` ran. The pid is in the name, so the mark appears whole in one step: a worker
    stopped while writing a pid into a file left it empty (seen on CI)."""
    path = Path(folder)
    try:  # marked started inside the try: an interrupt seen after the mark unwinds the job
        (path / f"{key}.{os.getpid()}.started").touch()
        time.sleep(seconds)
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
    time.sleep(60)


def test_stop_workers_kills_a_process_that_ignores_sigterm_after_the_grace():
    ctx = mp.get_context("spawn")
    ready = ctx.Event()
    proc = ctx.Process(target=_stubborn, args=(ready,))
    proc.start()
    assert ready.wait(60)
    t0 = time.monotonic()
    stop_workers([proc], grace=0.5)
    assert time.monotonic() - t0 < 3
    proc.join(5)
    assert proc.exitcode == -signal.SIGKILL


@pytest.mark.slow
def test_ctrl_c_stops_busy_workers_at_once_and_lets_their_jobs_unwind(tmp_path):
    jobs = [(str(tmp_path), f"j{i}", 120) for i in range(3)]
    results = execute(_nap, jobs, ExecutorSpec("process", workers=2))
    threading.Thread(target=lambda: (_started(tmp_path, 2), os.kill(os.getpid(),
                                                                     signal.SIGINT))).start()
    t0 = time.monotonic()
    with pytest.raises(Interrupted) as info:
        list(results)
    assert time.monotonic() - t0 < 120  # not the jobs' 120 s
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
    t0 = time.monotonic()
    with pytest.raises(TrialError, match="job bad failed: ValueError: broken"):
        list(execute(_fails, jobs, ExecutorSpec("process", workers=2)))
    assert time.monotonic() - t0 < 100  # the other job's 120 s were not waited for
    assert not any(_alive(p) for p in _worker_pids(tmp_path))


def test_in_process_ctrl_c_reports_the_running_trial(tmp_path):
    threading.Thread(target=lambda: (_started(tmp_path, 1), os.kill(os.getpid(),
                                                                     signal.SIGINT))).start()
    with pytest.raises(Interrupted) as info:
        list(execute(_nap, [(str(tmp_path), "only", 30)], ExecutorSpec("inprocess")))
    assert info.value.abandoned == 1
    assert (tmp_path / "only.unwound").exists()
