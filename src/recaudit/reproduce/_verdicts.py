"""Today's verdict of a record, remembered: what ``recaudit reproduce list`` shows.

A record's verdict is judged anew from its samples with today's claims and tests
(:func:`~recaudit.reproduce.judge`), which for the 29 committed records takes 7.7 CPU seconds
(947 tested comparisons; remembered, 0.8: ``benchmarks/bench_startup.py``). Nothing of it
changes unless the record, the code or the statistics libraries do, so the verdict is kept in
the per-user cache (``<cache>/verdicts/<key>.json``, the cache of
:func:`recaudit.data.datasets.data_dir`, which ``$RECAUDIT_DATA`` moves) under the
SHA-256 of:

- the record's files (``record.json`` and every samples part), their bytes;
- the experiment and scale;
- recaudit's own source (every ``.py`` file of the installed package: the claims, their rules
  and the tests all live there) and version;
- the versions of Python, numpy, scipy and pandas (a test's p-value comes from them).

So a changed record or rule, an upgrade or an edited checkout gives another key and the record
is judged again; an entry is never "refreshed", only found or not. The report
(:func:`~recaudit.reproduce.write_report`) always judges anew. A cache that cannot be read or
written is passed over (the verdict is judged, as without it).
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import platform
from pathlib import Path

from recaudit.reproduce._experiment import Experiment
from recaudit.reproduce._recording import judge, record_path
from recaudit.reproduce._samples import SAMPLES, sample_files

__all__ = ["listed_verdict"]

log = logging.getLogger(__name__)


@functools.lru_cache(maxsize=1)
def code_fingerprint() -> str:
    """SHA-256 of recaudit's source files and the versions its verdicts depend on."""
    import numpy
    import pandas
    import scipy

    import recaudit

    h = hashlib.sha256()
    for part in (recaudit.__version__, platform.python_version(), numpy.__version__,
                 scipy.__version__, pandas.__version__):
        h.update(part.encode() + b"\0")
    package = Path(recaudit.__file__).parent
    for path in sorted(package.rglob("*.py")):
        h.update(path.relative_to(package).as_posix().encode() + b"\0")
        h.update(path.read_bytes())
    return h.hexdigest()


def _key(root: Path, exp: Experiment, scale: str) -> str | None:
    """The cache key of ``exp``'s record at ``scale`` under ``root``; None without a record."""
    record = record_path(root, exp.name, scale)
    if not record.is_file():
        return None
    h = hashlib.sha256(f"{exp.name}\0{scale}\0{code_fingerprint()}\0".encode())
    for path in (record, *sample_files(record.with_name(SAMPLES))):
        data = path.read_bytes()
        h.update(f"{path.name}\0{len(data)}\0".encode())
        h.update(data)
    return h.hexdigest()


def listed_verdict(root: Path | str, exp: Experiment, scale: str,
                   cache: Path | None = None) -> str | None:
    """Today's verdict of ``exp``'s record at ``scale`` under ``root`` (None: no record), as
    :func:`~recaudit.reproduce.judge` gives it, from the cache when it was judged before
    (``cache``: the folder; default ``<data_dir>/verdicts``)."""
    root = Path(root)
    key = _key(root, exp, scale)
    if key is None:
        return None
    if cache is None:
        from recaudit.data.datasets import data_dir

        cache = data_dir() / "verdicts"
    entry = cache / f"{key}.json"
    try:
        return str(json.loads(entry.read_text(encoding="utf-8"))["verdict"])
    except FileNotFoundError:
        pass                       # not judged before: judged below
    except (OSError, ValueError, KeyError, TypeError) as exc:
        log.info("cannot read the remembered verdict %s (%s); judging the record", entry, exc)
    judged = judge(root, exp, scale)
    if judged is None:             # (removed between the key and now)
        return None
    verdict = str(judged[0]["verdict"])
    from recaudit._files import atomic_text
    from recaudit.errors import StorageError

    try:
        cache.mkdir(parents=True, exist_ok=True)
        atomic_text(entry, json.dumps({"verdict": verdict, "experiment": exp.name,
                                       "scale": scale}))
    except (OSError, StorageError) as exc:   # remembering saves time, it is not the work
        log.info("cannot remember the verdict in %s (%s)", cache, exc)
    return verdict
