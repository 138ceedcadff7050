"""The dataset registry: where each public data set comes from and how to get it offline.

Entries live in the package file ``datasets.toml`` (source URL, SHA-256 or ``"unknown"``,
expected size and counts, licence, citation). A name resolves, in this order, to

1. a file in a **mirror** directory: each entry of ``$RECAUDIT_MIRROR`` (``os.pathsep``
   separated, e.g. ``/data/a:/data/b``), in order, is searched for the entry's ``mirror``
   paths, then ``<name>/<file>`` and ``<name>/<base name of file>``;
2. the per-user **cache** (``$RECAUDIT_DATA``, else ``~/.cache/recaudit`` on Linux,
   ``~/Library/Caches/recaudit`` on macOS, ``%LOCALAPPDATA%\\recaudit\\Cache`` on Windows),
   where a completed download left ``<cache>/<name>/.recaudit-complete.json``;
3. a copy **bundled** with an installed package (ml-100k inside the ``recbole`` wheel; the
   package is located with :func:`importlib.util.find_spec`, never imported);
4. a **download**, only when asked (:func:`fetch` with ``download=True``, or
   ``recaudit datasets fetch``): the file is verified against the published SHA-256 when one is
   recorded; otherwise by its minimum size and by parsing it and comparing the row count with
   the recorded one. Archives are extracted safely (see :func:`safe_extract`).
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
import tomllib
import warnings
from dataclasses import dataclass, field, fields
from importlib import resources
from pathlib import Path
from typing import Any

from recaudit.data._download import download, safe_extract
from recaudit.data._interactions import Interactions
from recaudit._files import atomic_text
from recaudit.errors import DatasetError, RecauditWarning, closest

__all__ = ["DatasetSource", "Location", "MirrorFile", "Registry", "data_dir",
           "default_registry", "mirror_dirs"]

_MARKER = ".recaudit-complete.json"


@dataclass(frozen=True)
class MirrorFile:
    """A file a mirror directory may hold for a dataset: relative path and reader format."""

    path: str
    format: str


@dataclass(frozen=True)
class DatasetSource:
    """One registry entry: where a public dataset comes from and how to read it (the keys are
    documented at the top of ``datasets.toml``). Not to be confused with
    :class:`recaudit.experiment.DatasetSpec`, which names a dataset *in a study* (by this
    registry's name or a path) with its filters."""

    name: str
    title: str
    url: str
    file: str
    format: str
    archive: str = "none"
    sha256: str = "unknown"
    min_bytes: int = 0
    approx_size: str = "unknown"
    rows: int = 0
    users: int = 0
    items: int = 0
    licence: str = ""
    citation: str = ""
    homepage: str = ""
    notes: str = ""
    mirror: tuple[MirrorFile, ...] = ()
    bundled: str = ""
    cache_key: str = ""
    options: dict[str, Any] = field(default_factory=dict)

    @property
    def sha256_known(self) -> bool:
        return len(self.sha256) == 64 and all(c in "0123456789abcdef" for c in self.sha256.lower())

    @classmethod
    def from_dict(cls, name: str, data: dict[str, Any]) -> DatasetSource:
        known = {f.name for f in fields(cls)} - {"name"}
        unknown = set(data) - known
        if unknown:
            raise DatasetError(f"dataset {name!r}: unknown key(s) {sorted(unknown)} in the "
                               f"registry; known keys: {sorted(known)}")
        data = dict(data)
        data["mirror"] = tuple(MirrorFile(**m) for m in data.get("mirror", ()))
        return cls(name=name, **data)


@dataclass(frozen=True)
class Location:
    """Where a dataset was found: the interaction file, its reader format and the origin."""

    path: Path
    format: str
    origin: str  # "mirror", "cache", "bundled" or "download"


def data_dir() -> Path:
    """The per-user cache directory (``$RECAUDIT_DATA`` overrides the platform default)."""
    env = os.environ.get("RECAUDIT_DATA")
    if env:
        return Path(env).expanduser()
    if sys.platform == "win32":
        base = os.environ.get("LOCALAPPDATA") or str(Path.home() / "AppData" / "Local")
        return Path(base) / "recaudit" / "Cache"
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Caches" / "recaudit"
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "recaudit"


def mirror_dirs() -> list[Path]:
    """Existing directories listed in ``$RECAUDIT_MIRROR`` (``os.pathsep`` separated)."""
    raw = os.environ.get("RECAUDIT_MIRROR", "")
    return [Path(p).expanduser() for p in raw.split(os.pathsep) if p and Path(p).is_dir()]


def _recbole_ml100k() -> Path | None:
    """``ml-100k.inter`` inside an installed ``recbole`` package (located, not imported)."""
    try:
        spec = importlib.util.find_spec("recbole")
    except (ImportError, ValueError):
        return None
    for loc in (spec.submodule_search_locations or []) if spec else []:
        path = Path(loc) / "dataset_example" / "ml-100k" / "ml-100k.inter"
        if path.is_file():
            return path
    return None


_BUNDLED = {"recbole-ml-100k": (_recbole_ml100k, "recbole")}


def _find_file(root: Path, rel: str) -> Path | None:
    """``root/rel``, or a unique file named like ``rel`` anywhere below ``root``."""
    exact = root / rel
    if exact.is_file():
        return exact
    hits = sorted(p for p in root.rglob(Path(rel).name) if p.is_file())
    return hits[0] if len(hits) == 1 else None


class Registry:
    """A set of :class:`DatasetSource` with lookup, resolution, download and loading."""

    def __init__(self, specs: list[DatasetSource] | None = None) -> None:
        self._specs: dict[str, DatasetSource] = {}
        for spec in specs or []:
            self.register(spec)

    @classmethod
    def from_toml(cls, text: str) -> Registry:
        table = tomllib.loads(text)
        return cls([DatasetSource.from_dict(name, data) for name, data in table.items()])

    # ------------------------------------------------------------------ entries
    def register(self, spec: DatasetSource, *, replace: bool = False) -> None:
        if spec.name in self._specs and not replace:
            raise DatasetError(f"dataset {spec.name!r} is already registered; pass replace=True")
        self._specs[spec.name] = spec

    def unregister(self, name: str) -> None:
        self.spec(name)
        del self._specs[name]

    def names(self) -> list[str]:
        return sorted(self._specs)

    def spec(self, name: str) -> DatasetSource:
        if name not in self._specs:
            guess = closest(name, self._specs)
            raise DatasetError(f"unknown dataset {name!r}; known: {', '.join(self.names())}."
                               + (f" Did you mean {guess!r}?" if guess else ""))
        return self._specs[name]

    # ------------------------------------------------------------------ resolution
    def cache_dir(self, name: str) -> Path:
        spec = self.spec(name)
        return data_dir() / (spec.cache_key or spec.name)

    def locate(self, name: str) -> Location | None:
        """Where ``name`` is available without downloading, or ``None``."""
        spec = self.spec(name)
        candidates = list(spec.mirror) + [
            MirrorFile(f"{spec.name}/{spec.file}", spec.format),  # a copy of the cache layout
            MirrorFile(f"{spec.name}/{Path(spec.file).name}", spec.format)]
        for root in mirror_dirs():
            for cand in candidates:
                path = root / cand.path
                if path.is_file():
                    return Location(path, cand.format, "mirror")
        cache = self.cache_dir(name)
        if (cache / _MARKER).is_file() or (not spec.url and cache.is_dir()):
            found = _find_file(cache, spec.file)
            if found is not None:
                return Location(found, spec.format, "cache")
        if spec.bundled in _BUNDLED:
            finder, fmt = _BUNDLED[spec.bundled]
            bundled = finder()
            if bundled is not None:
                return Location(bundled, fmt, "bundled")
        return None

    def fetch(self, name: str, *, download: bool = False) -> Location:
        """Resolve ``name`` offline, or download it when ``download=True``.

        Raises :class:`DatasetError` when it is not available offline and ``download`` is
        false, when the dataset has no download URL, or when verification fails.
        """
        loc = self.locate(name)
        if loc is not None:
            return loc
        spec = self.spec(name)
        if not download:
            raise DatasetError(
                f"dataset {name!r} is not available offline (no mirror copy in "
                f"$RECAUDIT_MIRROR, not in the cache {self.cache_dir(name)}); run "
                f"`recaudit datasets fetch {name}` or pass download=True")
        if not spec.url:
            raise DatasetError(
                f"dataset {name!r} has no direct download URL; get {spec.file} by hand "
                f"({spec.homepage}) and put it in a $RECAUDIT_MIRROR directory or in "
                f"{self.cache_dir(name)}")
        return self._download(spec)

    def _download(self, spec: DatasetSource) -> Location:
        cache = self.cache_dir(spec.name)
        target = cache / (Path(spec.url.split("?")[0]).name or spec.file)
        sha = spec.sha256 if spec.sha256_known else None
        digest = download(spec.url, target, sha256=sha, min_bytes=spec.min_bytes)
        try:
            if spec.archive != "none":
                safe_extract(target, cache, spec.archive)
                target.unlink()
            found = _find_file(cache, spec.file)
            if found is None:
                raise DatasetError(f"the download of {spec.name!r} does not contain "
                                   f"{spec.file}; the source may have changed")
            if not sha:  # no checksum: the file must parse (format) with the expected rows
                warnings.warn(f"dataset {spec.name!r} has no published checksum: its download "
                              "is checked by parsing it and counting rows only",
                              RecauditWarning, stacklevel=3)
                log = self._read(Location(found, spec.format, "download"), spec, {})
                if spec.rows and len(log) != spec.rows:
                    raise DatasetError(
                        f"the download of {spec.name!r} has {len(log)} rows, the registry "
                        f"expects {spec.rows}; the source may have changed (no published "
                        f"checksum to check against)")
        except BaseException:
            (cache / _MARKER).unlink(missing_ok=True)
            raise
        atomic_text(cache / _MARKER, json.dumps(
            {"name": spec.name, "url": spec.url, "sha256": digest, "file": spec.file}))
        return Location(found, spec.format, "download")

    # ------------------------------------------------------------------ loading
    def _read(self, loc: Location, spec: DatasetSource, opts: dict[str, Any]) -> Interactions:
        from recaudit.data._detect import read

        return read(loc.path, format=loc.format, **{"name": spec.name, **spec.options, **opts})

    def load(self, name: str, *, download: bool = False, **opts: Any) -> Interactions:
        """Load ``name`` as :class:`Interactions` (reader options pass through)."""
        spec = self.spec(name)
        return self._read(self.fetch(name, download=download), spec, opts)

    def info(self, name: str) -> dict[str, Any]:
        """Everything known about ``name``, including where it resolves now."""
        spec = self.spec(name)
        loc = self.locate(name)
        sha = spec.sha256 if spec.sha256_known else (
            "unknown (no published checksum recorded; downloads are checked by size"
            + (f" and by parsing: the file must have {spec.rows:,} rows)" if spec.rows
               else " and by parsing)"))
        return {
            "name": spec.name, "title": spec.title, "homepage": spec.homepage,
            "url": spec.url or "(no direct download)", "format": spec.format,
            "sha256": sha, "size": spec.approx_size,
            "rows": spec.rows or "unknown", "users": spec.users or "unknown",
            "items": spec.items or "unknown", "licence": spec.licence,
            "citation": spec.citation, "notes": spec.notes,
            "available": f"{loc.origin}: {loc.path}" if loc else "not available offline",
        }


def default_registry() -> Registry:
    """The registry built from the package's ``datasets.toml`` (created once)."""
    if not _DEFAULT:
        text = resources.files("recaudit.data").joinpath("datasets.toml").read_text("utf-8")
        _DEFAULT.append(Registry.from_toml(text))
    return _DEFAULT[0]


_DEFAULT: list[Registry] = []
