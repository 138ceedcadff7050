"""Ctrl-C through the real ``recaudit`` entry point: exit 130, one line saying what is saved."""

import json
import os
import signal
import subprocess
import sys
import time

import pytest


@pytest.mark.slow
def test_sigint_ends_an_audit_with_130_and_says_what_is_saved(tmp_path):
    store = tmp_path / "a.duckdb"
    cmd = [sys.executable, "-c", "import sys; from recaudit.cli import _entry; "
           "sys.argv[0] = 'recaudit'; _entry()",
           "audit", "--dataset", "synthetic", "--model", "gru4rec", "-p", "random-delete",
           "-p", "seed-only", "--seeds", "20", "--param", "epochs=1", "--output", str(store)]
    # a shell's background job (make test &) ignores SIGINT, and a child inherits that:
    # give the audit the default disposition, as a terminal's foreground command has
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "COLUMNS": "200"},
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    progress = store.with_name(store.name + ".progress.json")
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if progress.exists() and json.loads(progress.read_text()).get("done", 0) >= 2:
            break
        time.sleep(0.2)
    else:
        proc.kill()
        pytest.fail("the audit saved no trial within two minutes")
    proc.send_signal(signal.SIGINT)
    try:
        _, err = proc.communicate(timeout=240)  # generous: CI machines may be loaded
    except subprocess.TimeoutExpired:
        proc.kill()
        _, err = proc.communicate()
        pytest.fail(f"the audit did not end within 4 minutes of SIGINT; stderr:\n{err}")
    assert proc.returncode == 130, err
    line = [x for x in err.splitlines() if x.startswith("error:")]
    assert len(line) == 1 and "interrupted" in line[0], err
    assert "saved in" in line[0] and "run the same command again to resume" in line[0]
    assert "Traceback" not in err
    n = int(line[0].split("— ")[1].split()[0])
    assert n >= 2
