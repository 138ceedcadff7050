"""Numba compiles a kernel once per argument type, seconds each in a fresh checkout: the
kernels see one type whether their input rank lists are writable or read-only (read from a
store), and the serial and parallel paths call the row kernel with the same types."""

import numpy as np

from recaudit.metrics import _accuracy, _kernels


def _lists(seed: int, rows: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return np.stack([rng.permutation(40)[:10] for _ in range(rows)]).astype(np.int32)


def test_read_only_rank_lists_reuse_the_writable_lists_compiled_kernel():
    a, b = _lists(0, 6), _lists(1, 6)
    want = _kernels.similarity_kernel(a, 10, b, 10, _kernels.EXT, 0.9, 0.0)
    targets = np.ascontiguousarray(b[:, :1], dtype=np.int64)
    acc = _accuracy._accuracy_kernel(a, targets, 0, 5)
    seen = (len(_kernels._rows.signatures), len(_accuracy._accuracy_rows.signatures))
    ra, rb = a.copy(), b.copy()
    ra.flags.writeable = rb.flags.writeable = False
    got = _kernels.similarity_kernel(ra, 10, rb, 10, _kernels.EXT, 0.9, 0.0)
    got_acc = _accuracy._accuracy_kernel(ra, targets, 0, 5)
    assert all(np.array_equal(x, y) for x, y in zip(got + got_acc, want + acc, strict=True))
    assert (len(_kernels._rows.signatures), len(_accuracy._accuracy_rows.signatures)) == seen
    assert a.flags.writeable  # the caller's array is left writable


def test_the_serial_and_parallel_paths_share_the_row_kernel():
    a, b = _lists(2, 4), _lists(3, 4)
    _kernels.similarity_kernel(a, 10, b, 10, _kernels.EXT, 0.9, 0.0)  # serial
    seen = len(_kernels._rows.signatures)
    n = _kernels.PARALLEL_MIN_WORK // 10 + 1
    big_a, big_b = np.tile(a, (n // 4 + 1, 1)), np.tile(b, (n // 4 + 1, 1))
    out, _ = _kernels.similarity_kernel(big_a, 10, big_b, 10, _kernels.EXT, 0.9, 0.0)
    small, _ = _kernels.similarity_kernel(a, 10, b, 10, _kernels.EXT, 0.9, 0.0)
    assert np.array_equal(out[:4], small)
    assert len(_kernels._rows.signatures) == seen
