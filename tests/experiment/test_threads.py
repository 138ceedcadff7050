"""Torch sized in a worker without being imported: at once when it is there, else the moment
it is imported (recaudit.experiment._threads)."""

import subprocess
import sys
import textwrap

import pytest

from recaudit.experiment import ExecutorSpec, execute


def _fresh(code: str) -> str:
    """``code`` in a fresh interpreter (torch not yet imported); its stdout."""
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip()


def test_torch_imported_after_sizing_has_the_count_before_its_first_operation():
    out = _fresh("""
        import sys
        from recaudit.experiment._threads import size_torch
        size_torch(3)
        assert "torch" not in sys.modules            # sizing imports nothing
        from torch import nn                         # a first import through a submodule
        import torch
        print(torch.get_num_threads(), torch.get_num_interop_threads())
        assert not any(type(f).__name__ == "_SizeOnImport" for f in sys.meta_path)
    """)
    assert out == "3 1"


def test_torch_already_imported_is_sized_at_once_and_the_latest_count_wins():
    out = _fresh("""
        import torch
        from recaudit.experiment._threads import size_torch
        size_torch(2)
        a = torch.get_num_threads()
        size_torch(1)
        print(a, torch.get_num_threads())
    """)
    assert out == "2 1"


def test_a_second_sizing_before_the_import_replaces_the_first():
    out = _fresh("""
        import sys
        from recaudit.experiment._threads import size_torch
        size_torch(3)
        size_torch(2)
        assert sum(type(f).__name__ == "_SizeOnImport" for f in sys.meta_path) == 1
        import torch
        print(torch.get_num_threads())
    """)
    assert out == "2"


def test_a_thread_count_below_one_is_refused():
    from recaudit.experiment._threads import size_torch

    with pytest.raises(ValueError, match="at least 1"):
        size_torch(0)


def _numpy_job(_):
    return "torch" in sys.modules


def _torch_job(_):
    import torch

    return torch.get_num_threads(), torch.get_num_interop_threads()


@pytest.mark.slow
def test_pool_workers_import_torch_only_for_jobs_that_use_it_and_size_it_first():
    spec = ExecutorSpec("process", workers=2, threads_per_worker=1)  # torch alone: 2
    assert set(execute(_numpy_job, [(0,), (1,)], spec)) == {False}
    assert set(execute(_torch_job, [(0,), (1,), (2,)], spec)) == {(1, 1)}
