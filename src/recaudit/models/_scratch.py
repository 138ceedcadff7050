"""Where models that talk to other programs keep their temporary files.

A model that exchanges files with another process (a command model, the RecBole worker)
creates one private directory per fitted model with :func:`make_workspace`, under the
*scratch directory*: the one set by :func:`scratch_dir` for the current context (the audit
runner sets the store's directory for each trial), else the system's temporary directory.
The directory is removed when the model is closed (``close()``) or garbage-collected.

A fitted model's trained state lives in that directory, so pickling one carries the
directory's files (:func:`pack_workspace`) and unpickling gives the copy a workspace of its own
(:func:`unpack_workspace`): the copy outlives the original, as a worker's copy must.
"""

from __future__ import annotations

import contextlib
import contextvars
import shutil
import tempfile
import weakref
from collections.abc import Iterator
from pathlib import Path

__all__ = ["scratch_dir", "current_scratch_dir", "make_workspace", "pack_workspace",
           "unpack_workspace"]

_SCRATCH: contextvars.ContextVar[Path | None] = contextvars.ContextVar("recaudit_scratch",
                                                                       default=None)


@contextlib.contextmanager
def scratch_dir(path: str | Path | None) -> Iterator[Path | None]:
    """Within the block, workspaces are created under ``path`` (``None``: the system temp)."""
    token = _SCRATCH.set(None if path is None else Path(path))
    try:
        yield _SCRATCH.get()
    finally:
        _SCRATCH.reset(token)


def current_scratch_dir() -> Path | None:
    return _SCRATCH.get()


def make_workspace(owner: object, prefix: str, parent: str | Path | None = None
                   ) -> tuple[Path, weakref.finalize]:
    """A new empty directory for ``owner`` and the finaliser that removes it.

    ``parent`` wins over the context's scratch directory. Calling the finaliser (or losing
    the last reference to ``owner``) deletes the directory and everything in it.
    """
    base = Path(parent) if parent is not None else current_scratch_dir()
    if base is not None:
        base.mkdir(parents=True, exist_ok=True)
    path = Path(tempfile.mkdtemp(prefix=prefix, dir=None if base is None else str(base)))
    return path, weakref.finalize(owner, shutil.rmtree, str(path), ignore_errors=True)


def pack_workspace(path: Path) -> dict[str, bytes]:
    """Every file under ``path`` as ``{relative posix path: content}``."""
    return {f.relative_to(path).as_posix(): f.read_bytes()
            for f in sorted(path.rglob("*")) if f.is_file()}


def unpack_workspace(owner: object, prefix: str, files: dict[str, bytes]
                     ) -> tuple[Path, weakref.finalize]:
    """A new workspace for ``owner`` (see :func:`make_workspace`) holding ``files``."""
    path, finalizer = make_workspace(owner, prefix)
    for name, content in files.items():
        target = path / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(content)
    return path, finalizer
