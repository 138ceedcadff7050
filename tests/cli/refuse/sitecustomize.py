"""A file system that refuses writes, for a ``recaudit`` subprocess of the storage tests.

Put this folder first on the subprocess's ``PYTHONPATH`` (``site`` imports it at start-up, in
every worker process too). With ``RECAUDIT_TEST_REFUSE_UNDER`` set, every Python-level write
under that folder fails as a full disk, a read-only file system or a forbidden folder would
make it fail: ``OSError(errno RECAUDIT_TEST_REFUSE_ERRNO)`` (``ENOSPC``, ``EROFS``, ``EACCES``)
from ``open`` for writing, ``os.open`` with a write flag and ``os.mkdir`` of a new folder; from
the start, or once the file ``RECAUDIT_TEST_REFUSE_WHEN`` exists (a folder made read-only
mid-run). DuckDB writes from C++, out of reach: its own refusals are tested on a real small
file system (``test_storage.py``).
"""

import builtins
import errno
import io
import os

_UNDER = os.environ.get("RECAUDIT_TEST_REFUSE_UNDER")

if _UNDER:
    _UNDER = os.path.abspath(_UNDER)
    _CODE = getattr(errno, os.environ.get("RECAUDIT_TEST_REFUSE_ERRNO", "ENOSPC"))
    _WHEN = os.environ.get("RECAUDIT_TEST_REFUSE_WHEN")

    def _refuse(path) -> None:
        name = os.path.abspath(os.fsdecode(path))
        if (name == _UNDER or name.startswith(_UNDER + os.sep)) and (
                not _WHEN or os.path.exists(_WHEN)):
            raise OSError(_CODE, os.strerror(_CODE), name)

    _open = builtins.open

    def _open_refusing(file, mode="r", *args, **kwargs):
        if isinstance(file, (str, bytes, os.PathLike)) and any(c in mode for c in "wax+"):
            _refuse(file)
        return _open(file, mode, *args, **kwargs)

    _os_open = os.open

    def _os_open_refusing(path, flags, *args, **kwargs):
        if flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT):
            _refuse(path)
        return _os_open(path, flags, *args, **kwargs)

    _mkdir = os.mkdir

    def _mkdir_refusing(path, *args, **kwargs):
        if not os.path.exists(path):  # an existing folder is an EEXIST first, as on a disk
            _refuse(path)
        return _mkdir(path, *args, **kwargs)

    builtins.open = io.open = _open_refusing
    os.open = _os_open_refusing
    os.mkdir = _mkdir_refusing
