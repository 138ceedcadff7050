"""Loading the data a spec names, the same way in every study and process.

:func:`load_dataset` reads (or generates) the dataset of a :class:`DatasetSpec` and applies its
filters; :func:`prepare` also splits it (:class:`SplitSpec`) and checks that a model can learn
from the training part. Both are memoised per process on the canonical JSON of their specs, so
a worker that runs many trials of one dataset loads and splits it once.

A worker on another machine need not be able to read the data at all: the Ray executor loads
each dataset once on the driver and hands it over (through Ray's object store) to
:func:`install_dataset`, which checks its fingerprint against the driver's; from then on
:func:`load_dataset` returns it in that process.
"""

from __future__ import annotations

import copy
import json
import logging
import os
from functools import lru_cache

from recaudit.data import Interactions, Split
from recaudit.errors import DataError
from recaudit._ids import canonical_json
from recaudit.experiment._specs import DatasetSpec, SplitSpec

__all__ = ["load_dataset", "read_dataset", "prepare", "split_log", "data_summary",
           "install_dataset"]

log = logging.getLogger(__name__)


def read_dataset(spec: DatasetSpec) -> Interactions:
    """The filtered log of ``spec``, read afresh (:func:`load_dataset` memoises it)."""
    from recaudit.data import filter_min_interactions, k_core, synthetic

    opts = dict(spec.options)
    if spec.path is not None:
        from recaudit.data import read

        data = read(spec.path, **opts)
    elif spec.name == "synthetic":
        seed = int(opts.pop("seed", 0))
        data = synthetic(seed=seed, **opts)
    else:
        data = _registered(spec.name, opts)
    before = len(data)
    if spec.k_core is not None:
        data = k_core(data, spec.k_core)
    elif spec.min_user_interactions > 0:
        data = filter_min_interactions(data, spec.min_user_interactions)
    if spec.sample_users is not None:
        from recaudit.data import sample_users

        users = int((data.user_counts() > 0).sum())
        if spec.sample_users >= users:
            _say_in_parent(f"{spec.label}: sample_users = {spec.sample_users:,} but the data "
                           f"has {users:,} users (after filtering): all are kept "
                           "(--sample-users, or sample_users in a [[datasets]] table)")
        data = sample_users(data, spec.sample_users)
    if len(data) < before:
        log.info("%s: the filters kept %d of %d interactions", spec.label, len(data), before)
        if spec.path is not None and spec.sample_users is None and len(data):
            _say_filtered(spec, len(data), before)
    if len(data) == 0:
        raise DataError("no interaction is left after filtering", source=spec.label,
                        hint=f"lower dataset.min_user_interactions "
                             f"({spec.min_user_interactions}) or k_core ({spec.k_core})")
    log.info("loaded %s: %d interactions, %d users, %d items", spec.label, len(data),
             data.n_users, data.n_items)
    return data


def _registered(name: str, opts: dict) -> Interactions:
    """A registered dataset; a name no registry knows is an error that also offers the
    built-in ``synthetic`` and a file (the registry knows neither)."""
    from recaudit.data.datasets import list_datasets, load
    from recaudit.errors import DatasetError, did_you_mean

    try:
        return load(name, **opts)
    except DatasetError:
        names = list_datasets()
        if name in names:
            raise
        raise DatasetError(f"unknown dataset {name!r}: neither a file nor a registered name "
                           f"({', '.join(names)}) nor synthetic (built in)."
                           + did_you_mean(name, ["synthetic", *names])) from None


def _say_in_parent(message: str) -> None:
    """A :class:`RecauditWarning`, once, in the process the user watches (not in every
    worker)."""
    import multiprocessing
    import warnings

    from recaudit.errors import RecauditWarning

    if multiprocessing.parent_process() is None:
        warnings.warn(message, RecauditWarning, stacklevel=4)


def _say_filtered(spec: DatasetSpec, kept: int, before: int) -> None:
    """A user's own file lost rows to the minimum-interactions filter: say so."""
    rule = (f"the {spec.k_core}-core filter" if spec.k_core is not None else
            f"dropping users with fewer than {spec.min_user_interactions} interactions")
    _say_in_parent(f"{spec.label}: {rule} kept {kept:,} of {before:,} interactions "
                   f"({100 * kept / before:.1f} %); change it with --min-interactions (or "
                   "min_user_interactions in a [[datasets]] table)")


@lru_cache(maxsize=4)
def _load_cached(dataset_json: str, stamp: str) -> Interactions:
    return read_dataset(DatasetSpec.from_dict(json.loads(dataset_json)))


def _stamp(spec: DatasetSpec) -> str:
    """What a file's memoised log is kept under besides its spec: the file's absolute path,
    size and modification time, so the same relative path read from another working folder,
    or a file written again, is read afresh (a folder of files: its own entry's times).
    Empty for registry datasets and what cannot be looked at (``read`` reports it)."""
    if spec.path is None:
        return ""
    try:
        st = os.stat(spec.path)
    except (OSError, ValueError):
        return ""
    return f"{os.path.abspath(spec.path)}|{st.st_size}|{st.st_mtime_ns}|{st.st_ino}"


#: Logs handed to this process by :func:`install_dataset`, by canonical dataset spec.
_INSTALLED: dict[str, Interactions] = {}


def install_dataset(spec: DatasetSpec | str, data: Interactions, fingerprint: str) -> None:
    """Make :func:`load_dataset` return ``data`` for ``spec`` (a spec or its canonical JSON)
    in this process, after checking that its content hashes to ``fingerprint`` (what the
    process that loaded it computed). Installing the same data again is free."""
    key = spec if isinstance(spec, str) else canonical_json(spec)
    have = _INSTALLED.get(key)
    if have is not None and have.fingerprint() == fingerprint:
        return
    fresh = copy.copy(data)
    object.__setattr__(fresh, "_fingerprint", [])  # recompute, not the sender's cached value
    if fresh.fingerprint() != fingerprint:
        raise DataError(f"the data received has fingerprint {fresh.fingerprint()[:12]}, not the "
                        f"sender's {fingerprint[:12]}", source=data.name,
                        hint="the same recaudit version must run on every node")
    _INSTALLED[key] = data
    if have is not None:
        _prepare_cached.cache_clear()  # splits of the data replaced


def load_dataset(spec: DatasetSpec) -> Interactions:
    """The filtered log of ``spec`` (memoised per process, or installed by
    :func:`install_dataset`).

    Errors: :class:`~recaudit.errors.DataError` for unreadable data or nothing left after the
    filters, :class:`~recaudit.errors.ConfigError` for bad options.
    """
    key = canonical_json(spec)
    installed = _INSTALLED.get(key)
    return installed if installed is not None else _load_cached(key, _stamp(spec))


@lru_cache(maxsize=4)
def _prepare_cached(dataset_json: str, split_json: str, stamp: str
                    ) -> tuple[Interactions, Split]:
    dataset = DatasetSpec.from_dict(json.loads(dataset_json))
    data = load_dataset(dataset)
    return data, split_log(data, SplitSpec.from_dict(json.loads(split_json)), dataset.label)


def split_log(data: Interactions, split: SplitSpec, label: str | None = None) -> Split:
    """``data`` split by ``split`` (what :func:`prepare` does once the log is loaded; for a
    log that comes from elsewhere, such as the copy an audit store keeps), checked: a model
    must have something to learn and to be asked."""
    from recaudit.data import split as do_split

    parts = do_split(data, split.method, **split.options())
    counts = parts.train.user_counts()
    if len(parts.queries) == 0 or not (counts >= 2).any():
        raise DataError(f"the {split.method} split leaves no test query or no user with two "
                        "training interactions: a next-item model cannot learn or be asked "
                        "anything", source=label or data.name,
                        hint="use data where users have several interactions each (check the "
                             "user and timestamp columns)")
    return parts


def prepare(dataset: DatasetSpec, split: SplitSpec) -> tuple[Interactions, Split]:
    """The filtered log of ``dataset`` and its ``split`` (memoised per process; a file's
    while it is unchanged, :func:`_stamp`)."""
    return _prepare_cached(canonical_json(dataset), canonical_json(split), _stamp(dataset))


def data_summary(data: Interactions, parts: Split | None = None) -> dict[str, object]:
    """Size and fingerprint of a log (and of its split) for a store's ``meta``."""
    out: dict[str, object] = {"interactions": len(data), "users": data.n_users,
                              "items": data.n_items, "fingerprint": data.fingerprint()}
    if parts is not None:
        out.update(parts.summary())
    return out
