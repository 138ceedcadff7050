"""Numba compiles a kernel once per argument type, seconds each in a fresh checkout: the
kernels see one type whether their input rank lists are writable or read-only (read from a
store), and the serial and parallel paths call the row kernel with the same types."""

import numpy as np

from recaudit.metrics import _accuracy, _kendall, _kernels


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
    # The row kernel as the serial path calls it, called here too: the serial kernel may have
    # come from numba's cache (another pytest worker wrote it), which links the row kernel in
    # without adding to its signatures; a parallel kernel compiled in this process adds one
    # exactly when it calls the row kernel with other types.
    ra, rb = _kernels.kernel_codes(a), _kernels.kernel_codes(b)
    powers, w = _kernels.weights(0.9, 20, False)
    out, err = np.empty(4), np.zeros(4, np.int8)
    _kernels._rows(ra, 10, rb, 10, _kernels.EXT, 0.9, w, powers, 0.0, 1.0, 64, np.int64(0), 4,
                   out, err)
    seen = len(_kernels._rows.signatures)
    assert seen == 1
    n = _kernels.PARALLEL_MIN_WORK // 10 + 1
    big_a, big_b = np.tile(a, (n // 4 + 1, 1)), np.tile(b, (n // 4 + 1, 1))
    out, _ = _kernels.similarity_kernel(big_a, 10, big_b, 10, _kernels.EXT, 0.9, 0.0)
    small, _ = _kernels.similarity_kernel(a, 10, b, 10, _kernels.EXT, 0.9, 0.0)
    assert np.array_equal(out[:4], small)
    assert len(_kernels._rows.signatures) == seen


def test_int64_codes_run_the_int32_kernels_and_give_the_same_values():
    """A user's ``np.array`` of codes is ``int64``, a model's rank lists ``int32``: one kernel
    serves both (RBO, Kendall's tau, accuracy), with the same values."""
    from recaudit.metrics import kendall_tau_batch, rbo_batch

    a, b = _lists(4, 5), _lists(5, 5)
    targets = np.ascontiguousarray(b[:, :1], dtype=np.int64)
    want = (rbo_batch(a, b, p=0.9), kendall_tau_batch(a, a[:, ::-1]),
            _accuracy._accuracy_kernel(a, targets, 0, 5)[0])
    # the kernels called from Python (a type loaded from numba's cache adds a signature too)
    entries = (_kernels._similarity_serial, _kendall._kendall_serial, _accuracy._accuracy_serial)
    seen = [len(k.signatures) for k in entries]
    a64, b64 = a.astype(np.int64), b.astype(np.int64)
    got = (rbo_batch(a64, b64, p=0.9), kendall_tau_batch(a64, a64[:, ::-1]),
           _accuracy._accuracy_kernel(a64, targets, 0, 5)[0])
    assert all(np.array_equal(x, y) for x, y in zip(got, want, strict=True))
    assert [len(k.signatures) for k in entries] == seen
    assert a64.dtype == np.int64  # the caller's array is not changed


def test_codes_beyond_int32_are_not_wrapped_into_valid_ones():
    """``2**32 + 3`` cast to ``int32`` would read as item 3: such codes reach the kernel as
    given (the kernel reports them: test_rbo.py, 2**40); codes that fit are cast."""
    for big in (2**32 + 3, -(2**31) - 1):
        a = np.array([[0, 1, big]], dtype=np.int64)
        got = _kernels.kernel_codes(a)
        assert got.dtype == np.int64 and np.array_equal(got, a) and not got.flags.writeable
    edge = np.array([[0, 2**31 - 1, -(2**31)]], dtype=np.int64)
    assert _kernels.kernel_codes(edge).dtype == np.int32
    assert np.array_equal(_kernels.kernel_codes(edge), edge)
