"""Downloading with checksums and safe archive extraction (used by the dataset registry).

Nothing here is half-done on failure: a download goes to a ``.part`` file that is removed on
any error, and an archive is checked member by member *before* anything is extracted, then
extracted into a temporary directory that is moved into place only when complete.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import shutil
import stat
import tarfile
import tempfile
import urllib.error
import urllib.request
import zipfile
from pathlib import Path, PurePosixPath

from recaudit._files import atomic_path
from recaudit.errors import DatasetError

log = logging.getLogger(__name__)

__all__ = ["download", "sha256_file", "safe_extract", "archive_kind"]

_CHUNK = 1 << 20


def sha256_file(path: str | os.PathLike) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(_CHUNK), b""):
            h.update(block)
    return h.hexdigest()


def download(url: str, dest: Path, *, sha256: str | None = None, min_bytes: int = 0,
             timeout: float = 60.0) -> str:
    """Download ``url`` to ``dest``; verify size and (if given) SHA-256; return the digest.

    Raises :class:`DatasetError` on network errors, a too-small file or a checksum mismatch;
    ``dest`` then does not exist.
    """
    h = hashlib.sha256()
    size = 0
    with atomic_path(dest) as tmp, open(tmp, "wb") as out:
        try:
            with urllib.request.urlopen(url, timeout=timeout) as resp:  # noqa: S310
                for block in iter(lambda: resp.read(_CHUNK), b""):
                    out.write(block)
                    h.update(block)
                    size += len(block)
        except (urllib.error.URLError, OSError, ValueError) as exc:
            reason = getattr(exc, "reason", exc)
            raise DatasetError(f"download of {url} failed: {reason}") from None
        digest = h.hexdigest()
        if size < min_bytes:
            raise DatasetError(f"download of {url} is {size} bytes, expected at least "
                               f"{min_bytes}; the server may have sent an error page")
        if sha256 and digest != sha256.lower():
            raise DatasetError(f"checksum mismatch for {url}: expected sha256 {sha256}, got "
                               f"{digest}; the file was deleted")
    log.info("downloaded %s (%d bytes) to %s", url, size, dest)
    return digest


def archive_kind(path: Path, declared: str = "auto") -> str:
    """``"zip"``, ``"tar"`` or ``"none"``, from ``declared`` or the file's content."""
    if declared in ("zip", "tar", "none"):
        return declared
    if zipfile.is_zipfile(path):
        return "zip"
    if tarfile.is_tarfile(path):
        return "tar"
    return "none"


def _check_name(name: str, archive: Path) -> PurePosixPath:
    norm = name.replace("\\", "/")
    parts = PurePosixPath(norm).parts
    if norm.startswith("/") or re.match(r"^[A-Za-z]:", norm) or ".." in parts:
        raise DatasetError(f"unsafe member {name!r} in archive {archive.name} (absolute path or "
                           "'..'); refusing to extract anything from it")
    return PurePosixPath(norm)


def _inside(base: Path, target: Path) -> bool:
    base = base.resolve()
    target = Path(os.path.normpath(target))
    return target == base or base in target.parents


def _check_zip(zf: zipfile.ZipFile, archive: Path) -> None:
    for info in zf.infolist():
        _check_name(info.filename, archive)
        mode = info.external_attr >> 16
        if stat.S_ISLNK(mode):
            raise DatasetError(f"archive {archive.name} contains a symbolic link "
                               f"({info.filename!r}); refusing to extract it")


def _check_tar(tf: tarfile.TarFile, archive: Path, dest: Path) -> None:
    base = dest.resolve()
    for m in tf.getmembers():
        rel = _check_name(m.name, archive)
        if m.issym() or m.islnk():
            origin = (base / rel).parent if m.issym() else base
            if os.path.isabs(m.linkname) or not _inside(base, origin / m.linkname):
                raise DatasetError(f"archive {archive.name}: link {m.name!r} -> {m.linkname!r} "
                                   "points outside the extraction directory; refusing to "
                                   "extract it")
        elif not (m.isfile() or m.isdir()):
            raise DatasetError(f"archive {archive.name}: member {m.name!r} is not a regular "
                               "file or directory; refusing to extract it")


def safe_extract(archive: Path, dest: Path, kind: str = "auto") -> None:
    """Extract ``archive`` (zip or tar, any compression) into directory ``dest``.

    Every member is checked first: absolute paths, ``..`` components, symbolic links in zip
    files, tar links pointing outside ``dest`` and special files raise :class:`DatasetError`
    and nothing is extracted. Extraction goes to a temporary directory next to ``dest``;
    its entries then replace same-named entries of ``dest``.
    """
    kind = archive_kind(archive, kind)
    dest.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".extract.", dir=dest))
    try:
        if kind == "zip":
            with zipfile.ZipFile(archive) as zf:
                _check_zip(zf, archive)
                for info in zf.infolist():
                    target = staging / _check_name(info.filename, archive)
                    if info.is_dir():
                        target.mkdir(parents=True, exist_ok=True)
                        continue
                    target.parent.mkdir(parents=True, exist_ok=True)
                    with zf.open(info) as src, open(target, "wb") as out:
                        shutil.copyfileobj(src, out, _CHUNK)
        elif kind == "tar":
            with tarfile.open(archive, "r:*") as tf:
                _check_tar(tf, archive, staging)
                if hasattr(tarfile, "data_filter"):  # Python >= 3.11.4
                    tf.extractall(staging, filter="data")
                else:  # members were checked above
                    tf.extractall(staging)  # noqa: S202
        else:
            raise DatasetError(f"{archive.name} is not a zip or tar archive")
        for entry in staging.iterdir():
            target = dest / entry.name
            if target.is_dir() and not target.is_symlink():
                shutil.rmtree(target)
            elif target.exists() or target.is_symlink():
                target.unlink()
            os.replace(entry, target)
    except (zipfile.BadZipFile, tarfile.TarError) as exc:
        raise DatasetError(f"{archive.name} is a damaged archive: {exc}") from None
    finally:
        shutil.rmtree(staging, ignore_errors=True)
