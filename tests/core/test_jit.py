"""Issue 60, item 9: an install whose folder nobody may write (and no writable cache folder)
failed at the first metric — numba's ``cache=True`` refused the function ("cannot cache
function 'weights': no locator available"). :func:`recaudit._jit.njit` compiles without the
cache there, and keeps it wherever numba can."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import recaudit

SRC = str(Path(recaudit.__file__).resolve().parents[1])


def _run(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, timeout=600, env={"PYTHONPATH": SRC,
                                                       "PATH": "/usr/bin:/bin"})


def test_metrics_run_uncached_where_numba_has_no_cache_folder():
    proc = _run("""
        import numba.core.caching as caching
        caching.CacheImpl._locator_classes = []   # no folder numba may cache in
        import numpy as np
        from recaudit.metrics import rbo
        from recaudit.metrics._kernels import weights
        a, b = np.array([0, 1, 2, 3]), np.array([0, 2, 1, 3])
        print(float(rbo(a, b, p=0.9)), type(weights._cache).__name__)
    """)
    assert proc.returncode == 0, proc.stderr
    value, cache = proc.stdout.split()
    assert cache == "NullCache" and 0 < float(value) < 1


def test_the_same_function_is_cached_where_numba_can():
    proc = _run("""
        import numpy as np
        from recaudit.metrics import rbo
        from recaudit.metrics._kernels import weights
        a, b = np.array([0, 1, 2, 3]), np.array([0, 2, 1, 3])
        print(float(rbo(a, b, p=0.9)), type(weights._cache).__name__)
    """)
    assert proc.returncode == 0, proc.stderr
    value, cache = proc.stdout.split()
    assert cache == "FunctionCache"
