"""An audit on a local Ray cluster that recaudit starts itself (``ExecutorSpec("ray")`` without
an address): the numbers of the same audit run in-process. Stacks on Ray are checked on the
simulated cluster of ``test_cluster.py`` (a second local start here cost the suite 10 s)."""

from __future__ import annotations

import shutil
import sys
import tempfile

import pandas as pd
import pytest

pytest.importorskip("ray")

from recaudit.audit import ExecutorSpec, run_audit  # noqa: E402
from tests.audit.test_engine import _config, _numbers  # noqa: E402

pytestmark = pytest.mark.ray  # `make test` runs tests/ray alone, after the others


@pytest.mark.slow
def test_ray_gives_identical_numbers(tmp_path, monkeypatch):
    if " " in sys.executable:  # Ray's workers cannot start (recaudit.experiment._ray)
        pytest.skip("Ray cannot start workers from a Python path with a space")
    # Ray's unix sockets need a short path; keep its files (and ~/.ray) out of the real home.
    short = tempfile.mkdtemp(prefix="rt", dir="/tmp")
    monkeypatch.setenv("RAY_TMPDIR", short)
    monkeypatch.setenv("HOME", short)
    # A loaded machine may need minutes to start Ray's GCS server and workers (defaults 30/60 s).
    monkeypatch.setenv("RAY_gcs_server_port_wait_time_s", "600")
    monkeypatch.setenv("RAY_worker_register_timeout_seconds", "900")
    # Left unset, ray.init turns token authentication on for the whole process (it exports
    # RAY_AUTH_MODE=token, with the token under this temporary HOME): a later Ray cluster in
    # this process (test_cluster.py) would then find no token and its GCS server would abort.
    # Every Ray test of the suite runs with authentication off.
    monkeypatch.setenv("RAY_AUTH_MODE", "disabled")
    monkeypatch.delenv("RAY_USAGE_STATS_ENABLED", raising=False)
    monkeypatch.delenv("PYTHONBREAKPOINT", raising=False)
    a = _config(tmp_path, "a.duckdb", seeds=(0,))
    b = _config(tmp_path, "b.duckdb", seeds=(0,), executor=ExecutorSpec("ray", workers=2))
    try:
        run_audit(a)
        run_audit(b)
    finally:
        shutil.rmtree(short, ignore_errors=True)
    pd.testing.assert_frame_equal(_numbers(a.output), _numbers(b.output))
