"""Public data sets by name: ``list_datasets()``, ``dataset_info()``, ``fetch()``, ``load()``.

>>> from recaudit.data import datasets
>>> datasets.list_datasets()[:3]
['foursquare', 'foursquare-nyc', 'foursquare-tky']
>>> log = datasets.load("wikipedia")          # doctest: +SKIP  (mirror, cache or error)
>>> path = datasets.fetch("ml-1m", download=True)  # doctest: +SKIP  (explicit download)

Nothing is downloaded unless asked. Set ``RECAUDIT_MIRROR`` to directories holding copies
(looked up first) and ``RECAUDIT_DATA`` to move the download cache; see
:mod:`recaudit.data._registry` for the resolution order and the verification rules.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from recaudit.data._interactions import Interactions
from recaudit.data._registry import (
    DatasetSource,
    Location,
    MirrorFile,
    Registry,
    data_dir,
    default_registry,
    mirror_dirs,
)

__all__ = ["DatasetSource", "Location", "MirrorFile", "Registry", "data_dir", "dataset_info",
           "default_registry", "fetch", "list_datasets", "load", "locate", "mirror_dirs",
           "register_dataset", "unregister_dataset"]


def list_datasets() -> list[str]:
    """Names of the registered data sets, sorted."""
    return default_registry().names()


def dataset_info(name: str) -> dict[str, Any]:
    """Source, checksum (or why it is unknown), size, counts, licence, citation, availability."""
    return default_registry().info(name)


def locate(name: str) -> Location | None:
    """Where ``name`` is available offline (mirror, cache, bundled copy) or ``None``."""
    return default_registry().locate(name)


def fetch(name: str, *, download: bool = False) -> Path:
    """Path of ``name``'s interaction file; downloads (verified) only with ``download=True``."""
    return default_registry().fetch(name, download=download).path


def load(name: str, *, download: bool = False, **opts: Any) -> Interactions:
    """Load ``name`` as :class:`Interactions`; ``opts`` go to the format's reader."""
    return default_registry().load(name, download=download, **opts)


def register_dataset(spec: DatasetSource, *, replace: bool = False) -> None:
    """Add a data set to the default registry (e.g. a private mirror of a corpus)."""
    default_registry().register(spec, replace=replace)


def unregister_dataset(name: str) -> None:
    default_registry().unregister(name)
