"""A cache of named numpy arrays under a directory or an fsspec URL (``cache_uri``).

Each entry is one ``<key>.npz`` file. Writes are atomic for readers: the file is written under
a temporary name next to its final one and then moved onto it, so a reader sees a whole entry
or none, whatever process dies when (local files: :func:`os.replace`; object stores such as
S3 or GCS: an object appears only once its upload completes). Two writers of one key write the
same bytes (trials are pure functions of their specs), so the last move wins harmlessly.

A finished entry is never lost to an interrupt: ``put`` holds SIGINT and SIGTERM until the
entry is written (:func:`recaudit.experiment._stopping.deferred_signals`), so a Ctrl-C (or the
SIGTERM a stopped pool's worker gets) that lands while a baseline's lists are being written
acts once they are on disk.

Entries are verified on read: ``put`` stores a SHA-256 of the arrays (names, dtypes, shapes,
bytes) beside them, and ``get`` treats an entry that cannot be read (a truncated file from a
full disk or an interrupted copy) or whose arrays do not match their checksum as absent, with
a :class:`~recaudit.errors.RecauditWarning`: the caller recomputes it and ``put`` replaces it.
Entries written before checksums existed are read as they are.

Local paths (``/data/cache``, ``file:///data/cache``) need nothing beyond numpy; other URLs go
through ``fsspec`` (a dependency of torch) and its backend (``s3fs``, ``gcsfs``, ...), which
every node that reads or writes the cache must have.
"""

from __future__ import annotations

import hashlib
import io
import os
import uuid
import warnings
import zipfile
from pathlib import Path

import numpy as np

from recaudit._files import atomic_path
from recaudit.experiment._stopping import deferred_signals

__all__ = ["ArrayCache", "check_uri"]

_SUM = "__sha256__"


def _digest(arrays: dict[str, np.ndarray]) -> np.ndarray:
    h = hashlib.sha256()
    for name in sorted(arrays):
        a = np.ascontiguousarray(arrays[name])
        h.update(f"{name}|{a.dtype.str}|{a.shape}|".encode())
        h.update(a.reshape(-1).view(np.uint8).data if a.size else b"")   # no copy
    return np.frombuffer(h.digest(), dtype=np.uint8)


def _read(source, where: str) -> dict[str, np.ndarray] | None:
    """The arrays of one entry, verified; None (with a warning) when it is damaged."""
    from recaudit.errors import RecauditWarning

    try:
        with np.load(source) as z:
            arrays = {name: z[name] for name in z.files}
    except (zipfile.BadZipFile, EOFError, ValueError, OSError) as exc:
        problem = f"cannot be read ({type(exc).__name__}: {exc})"
    else:
        stored = arrays.pop(_SUM, None)
        if stored is None or np.array_equal(stored, _digest(arrays)):
            return arrays
        problem = "does not match its checksum"
    warnings.warn(f"cached entry {where} {problem}; it is computed again and replaced",
                  RecauditWarning, stacklevel=3)
    return None


def _split(uri: str) -> tuple[str | None, str]:
    """``(protocol, path)``; protocol ``None`` for a local path."""
    if "://" not in uri:
        return None, uri
    protocol, path = uri.split("://", 1)
    if protocol in ("file", "local"):
        return None, path
    return protocol, path


def check_uri(uri: str) -> str | None:
    """Validate ``uri``; returns its local path (``None`` for a remote URL).

    Raises ``ValueError`` for an empty URI or a protocol fsspec does not know.
    """
    if not uri.strip():
        raise ValueError("must be a directory or a URL such as s3://bucket/prefix, not empty")
    protocol, path = _split(uri)
    if protocol is None:
        return path
    try:
        from fsspec.registry import known_implementations, registry
    except ImportError:
        raise ValueError(f"{uri!r} is a URL: storage other than local paths needs fsspec "
                         "(pip install fsspec, and its backend such as s3fs)") from None
    if protocol not in known_implementations and protocol not in registry:
        raise ValueError(f"unknown storage protocol {protocol!r} in {uri!r}; fsspec knows "
                         "s3, gs, az, memory, file, ... (the backend package, e.g. s3fs, must "
                         "be installed where the cache is used)")
    return None


class ArrayCache:
    """Entries of named arrays under ``uri`` (see the module docstring)."""

    def __init__(self, uri: str | os.PathLike) -> None:
        self.uri = str(uri)
        protocol, path = _split(self.uri)
        self._local = Path(path) if protocol is None else None
        self._fs = None
        if protocol is not None:
            try:
                import fsspec

                self._fs = fsspec.filesystem(protocol)
            except ImportError as exc:
                raise ImportError(f"cache_uri {self.uri!r}: {exc}") from None
            self._root = path.rstrip("/")

    def __repr__(self) -> str:
        return f"ArrayCache({self.uri!r})"

    def _remote(self, key: str) -> str:
        return f"{self._root}/{key}.npz"

    def has(self, key: str) -> bool:
        """Whether an entry ``key`` exists (without reading or checking it)."""
        if self._local is not None:
            return (self._local / f"{key}.npz").exists()
        assert self._fs is not None
        return bool(self._fs.exists(self._remote(key)))

    def get(self, key: str) -> dict[str, np.ndarray] | None:
        """The arrays stored under ``key``, or ``None`` when there is no such entry."""
        if self._local is not None:
            path = self._local / f"{key}.npz"
            if not path.exists():
                return None
            return _read(path, str(path))
        assert self._fs is not None
        name = self._remote(key)
        try:
            with self._fs.open(name, "rb") as fh:
                raw = fh.read()
        except FileNotFoundError:
            return None
        return _read(io.BytesIO(raw), f"{self.uri}/{key}.npz")

    def put(self, key: str, *, compress: bool = False, **arrays: np.ndarray) -> None:
        """Store ``arrays`` under ``key`` (atomically for readers), with their checksum;
        ``compress``: deflate them (:func:`numpy.savez_compressed`; read back the same way).
        An interrupt during the write acts once it is done (module docstring)."""
        with deferred_signals():
            self._put(key, {**arrays, _SUM: _digest(arrays)}, compress)

    def _put(self, key: str, arrays: dict[str, np.ndarray], compress: bool) -> None:
        save = np.savez_compressed if compress else np.savez
        if self._local is not None:
            with atomic_path(self._local / f"{key}.npz") as tmp, open(tmp, "wb") as fh:
                save(fh, **arrays)  # type: ignore[arg-type]
            return
        assert self._fs is not None
        buf = io.BytesIO()
        save(buf, **arrays)  # type: ignore[arg-type]
        name = self._remote(key)
        part = f"{self._root}/.{key}.{uuid.uuid4().hex}.part"
        self._fs.makedirs(self._root, exist_ok=True)
        self._fs.pipe_file(part, buf.getvalue())
        try:
            self._fs.mv(part, name)
        finally:
            if self._fs.exists(part):
                self._fs.rm(part)
