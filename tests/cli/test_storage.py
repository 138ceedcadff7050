"""A full disk or a folder that cannot be written, met through ``python -m recaudit``: one line
saying what could not be written where and what to do (free space, another -o), the finished
trials kept, and a rerun resumes.

The refusals are injected at the OS-call level in the subprocess (``refuse/sitecustomize.py``:
``ENOSPC``, ``EROFS``, ``EACCES`` from ``open``, ``os.open``, ``os.mkdir``), as the tests run as
root, which no folder's permissions stop. DuckDB writes from C++, out of that reach: its full
disk is a real 3 MB tmpfs where one can be mounted (root on Linux), else skipped.
"""

import json
import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from recaudit.audit import AuditStore

from ._entry import recaudit_here
from .conftest import USER_MODELS, recaudit_cmd, recaudit_env

REFUSE = str(Path(__file__).with_name("refuse"))


def _env(under: Path | None = None, code: str = "ENOSPC", when: Path | None = None,
         **extra: str) -> dict[str, str]:
    env = recaudit_env(**extra)
    if under is not None:
        env["PYTHONPATH"] = REFUSE + os.pathsep + env["PYTHONPATH"]
        env.update(RECAUDIT_TEST_REFUSE_UNDER=str(under), RECAUDIT_TEST_REFUSE_ERRNO=code)
        if when is not None:
            env["RECAUDIT_TEST_REFUSE_WHEN"] = str(when)
    return env


def _audit_args(store: Path, seeds: int = 2) -> list[str]:
    return ["audit", "--model", "usermodels:Pop", "-p", "random-delete", "-p", "seed-only",
            "--seeds", str(seeds), "--output", str(store)]


def _run(folder: Path, args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run(recaudit_cmd(*args), cwd=folder, capture_output=True, text=True,
                          env=env, timeout=600)


def _rerun(folder: Path, args: list[str]) -> subprocess.CompletedProcess:
    """A run with nothing refused (a finished store to read, a rerun that resumes): in this
    process, as the command's entry runs it; the refusals need the child's ``sitecustomize``."""
    return recaudit_here(*args, cwd=folder, env={"COLUMNS": "200"})


def _error(proc: subprocess.CompletedProcess) -> str:
    assert "Traceback" not in proc.stderr, proc.stderr
    lines = [x for x in proc.stderr.splitlines() if x.startswith("error:")]
    assert len(lines) == 1, proc.stderr
    assert not [x for x in proc.stderr.splitlines() if not x.startswith(("error:", "warning:"))]
    return lines[0]


def _trials(store: Path) -> dict[str, float]:
    with AuditStore(store, read_only=True) as s:
        t = s.trials()
    return dict(zip(t.trial_id, t.finished))


@pytest.fixture
def folder(tmp_path):
    (tmp_path / "usermodels.py").write_text(USER_MODELS)
    return tmp_path


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    """A finished audit's store, to render and export."""
    folder = tmp_path_factory.mktemp("store")
    (folder / "usermodels.py").write_text(USER_MODELS)
    path = folder / "a.duckdb"
    proc = _rerun(folder, _audit_args(path, seeds=1))
    assert proc.returncode == 0, proc.stderr
    return path


@pytest.mark.slow
def test_a_full_disk_is_one_line_and_a_rerun_resumes(folder):
    out = folder / "out"
    out.mkdir()
    store = out / "a.duckdb"
    proc = _run(folder, _audit_args(store), _env(under=out, code="ENOSPC"))
    assert proc.returncode == 2
    line = _error(proc)
    assert line == (f"error: cannot create the folder {store}.baselines: no space left on the "
                    f"device — 0 finished trials saved in {store}; free space there and run "
                    "the same command again to resume (or choose another -o/--output to start "
                    "afresh)")
    rerun = _rerun(folder, _audit_args(store))
    assert rerun.returncode == 0, rerun.stderr
    assert len(_trials(store)) == 4


@pytest.mark.slow
def test_a_folder_made_read_only_mid_run_keeps_the_finished_trials(folder):
    out = folder / "out"
    store = out / "a.duckdb"
    flag = folder / "now-read-only"
    proc = subprocess.Popen(recaudit_cmd(*_audit_args(store, seeds=3)), cwd=folder,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=_env(under=out, code="EACCES", when=flag,
                                     RECAUDIT_TEST_SLEEP="1"))
    progress = out / "a.duckdb.progress.json"
    deadline = time.monotonic() + 300
    while not (progress.exists() and json.loads(progress.read_text())["done"] >= 2):
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
        time.sleep(0.1)
    flag.touch()  # from now on, nothing under out/ can be written
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == 2, err
    line = _error(subprocess.CompletedProcess([], 2, "", err))
    saved = _trials(store)
    assert len(saved) >= 2
    assert line.startswith(f"error: cannot write {store}.baselines/"), line
    assert (f".npz: permission denied — {len(saved)} finished trials saved in {store}; make "
            "it writable and run the same command again to resume (or choose another "
            "-o/--output to start afresh)") in line, line
    assert "warning: the progress of this run cannot be written" in err
    rerun = _rerun(folder, _audit_args(store, seeds=3))
    assert rerun.returncode == 0, rerun.stderr
    after = _trials(store)
    assert len(after) == 6
    assert {t: after[t] for t in saved} == saved  # kept, not run again


def test_a_new_subfolder_in_a_read_only_folder(folder):
    store = folder / "ro" / "sub" / "a.duckdb"
    (folder / "ro").mkdir()
    proc = _run(folder, _audit_args(store), _env(under=folder / "ro", code="EROFS"))
    assert proc.returncode == 2
    assert _error(proc) == (f"error: cannot create the folder {store.parent}: the file system "
                            "is read-only; choose another -o/--output, in a folder you can "
                            "write to")
    assert not store.parent.exists()


@pytest.mark.parametrize("command, target, says", [
    (["report", "{store}", "-o", "{ro}/r.md"], "{ro}/r.md",
     "cannot write {target}: permission denied; choose another -o/--output"),
    (["report", "{store}", "--format", "csv", "-o", "{ro}/tables"], "{ro}/tables",
     "cannot create the folder {target}: permission denied; choose another -o/--output"),
    (["export", "{store}", "{ro}/x"], "{ro}/x",
     "cannot create the folder {target}: permission denied; choose another DIRECTORY"),
])
def test_report_and_export_into_a_forbidden_folder(store, tmp_path, command, target, says):
    ro = tmp_path / "ro"
    ro.mkdir()
    fill = {"store": str(store), "ro": str(ro)}
    target = target.format(**fill)
    proc = _run(store.parent, [c.format(**fill) for c in command],
                _env(under=ro, code="EACCES"))
    assert proc.returncode == 2
    assert _error(proc) == f"error: {says.format(target=target)}, in a folder you can write to"
    assert list(ro.iterdir()) == []  # nothing half-written


# ------------------------------------------------------------------ real small file systems
@pytest.fixture
def tmpfs(tmp_path):
    """Mount a 3 MB tmpfs (root on Linux only), unmounted afterwards."""
    where = tmp_path / "small"
    where.mkdir()
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("mounting a small file system needs root")
    made = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=3m", "tmpfs", str(where)],
                          capture_output=True, text=True)
    if made.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {made.stderr.strip()}")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


def _remount(where: Path, options: str) -> None:
    subprocess.run(["mount", "-o", f"remount,{options}", str(where)], check=True)


@pytest.mark.slow
def test_a_store_on_a_small_file_system_fills_it_then_resumes(folder, tmpfs):
    store = tmpfs / "a.duckdb"
    proc = _run(folder, _audit_args(store, seeds=4), _env())
    assert proc.returncode == 2, proc.stderr
    line = _error(proc)
    assert line.startswith("error: cannot ") and ": no space left on the device — " in line
    saved = _trials(store)
    assert (f"— {len(saved)} finished trial{'s' if len(saved) != 1 else ''} saved in {store}; "
            "free space there and run the same command again to resume") in line, line
    _remount(tmpfs, "size=64m")
    rerun = _run(folder, _audit_args(store, seeds=4), _env())
    assert rerun.returncode == 0, rerun.stderr
    after = _trials(store)
    assert len(after) == 8 and {t: after[t] for t in saved} == saved


def test_export_report_and_audit_on_a_read_only_file_system(store, tmpfs):
    _remount(tmpfs, "ro")
    proc = _run(store.parent, ["export", str(store), str(tmpfs)], _env())
    assert proc.returncode == 2
    assert _error(proc) == (f"error: cannot write {tmpfs}/meta.parquet: the file system is "
                            "read-only; choose another DIRECTORY, in a folder you can write to")
    proc = _run(store.parent, ["report", str(store), "-o", str(tmpfs / "r.md")], _env())
    assert proc.returncode == 2
    assert _error(proc) == (f"error: cannot write {tmpfs}/r.md: the file system is "
                            "read-only; choose another -o/--output, in a folder you can write "
                            "to")
    proc = _run(store.parent, _audit_args(tmpfs / "a.duckdb"), _env())
    assert proc.returncode == 2
    assert _error(proc).startswith(f"error: cannot open the results store {tmpfs}/a.duckdb: "
                                   "the file system is read-only; choose another -o/--output")
