"""Files written whole or not at all: :func:`atomic_path` and :func:`atomic_write`.

A writer gets a temporary path in the target's directory (same file system, so the final
:func:`os.replace` is atomic); the target appears only once the writer has finished, and the
temporary file is removed if it fails. A process killed at any moment leaves the old file (or
none), never a half-written one. The file gets the permissions of any new file (``0o666``
less the umask), not the temporary file's private ``0o600``. A write the file system refuses
is a :class:`~recaudit.errors.StorageError` naming the file (:func:`writing`).
"""

from __future__ import annotations

import contextlib
import functools
import os
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

from recaudit.errors import storage_error

__all__ = ["atomic_path", "atomic_write", "atomic_text", "writing"]


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike, suffix: str = ".part") -> Iterator[Path]:
    """A temporary path next to ``path``, moved onto ``path`` when the block ends normally.

    A write the file system refuses (no space left, a read-only or forbidden folder), here or
    in the block, is a :class:`~recaudit.errors.StorageError` naming ``path`` (not the
    temporary file)."""
    path = Path(path)
    with writing(path.parent, action="create the folder"):
        path.parent.mkdir(parents=True, exist_ok=True)
    with writing(path):
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=suffix, dir=path.parent)
        try:
            os.fchmod(fd, _mode(path))
        finally:
            os.close(fd)
        try:
            yield Path(tmp)
            os.replace(tmp, path)
        finally:
            if os.path.exists(tmp):
                with contextlib.suppress(OSError):  # the first error is the one to report
                    os.unlink(tmp)


@contextlib.contextmanager
def writing(path: str | os.PathLike, action: str = "write") -> Iterator[None]:
    """A block that writes ``path``: an error saying that the file system refused the write
    (an ``OSError`` such as ``ENOSPC``, ``EROFS``, ``EACCES``, or another library's error
    quoting one) leaves it as a :class:`~recaudit.errors.StorageError` naming ``path``."""
    try:
        yield
    except Exception as exc:
        disk = storage_error(exc, path, action=action)
        if disk is None or disk is exc:
            raise
        raise disk from exc


def _mode(path: Path) -> int:
    """The permissions of a file written to ``path``: what ``open`` gives a new file, ``0o666``
    less the umask (``mkstemp``'s private ``0o600`` would hide reports, progress and baseline
    files from the group and from other users the umask lets read them)."""
    return 0o666 & ~_umask()


@functools.cache
def _umask() -> int:
    """The process's umask, read once: from ``/proc`` where there is one (reading it with
    :func:`os.umask` means setting it, a race with threads creating files)."""
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def atomic_write(path: str | os.PathLike, write: Callable[[str], None],
                 suffix: str = ".part") -> None:
    """Call ``write(tmp_path)`` and move the result onto ``path`` (see :func:`atomic_path`)."""
    with atomic_path(path, suffix) as tmp:
        write(str(tmp))


def atomic_text(path: str | os.PathLike, text: str) -> Path:
    """Write ``text`` (UTF-8) to ``path`` whole or not at all; returns the path."""
    with atomic_path(path) as tmp:
        tmp.write_text(text, encoding="utf-8")
    return Path(path)
