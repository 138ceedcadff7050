"""A trial's baseline: the unperturbed model of its (dataset, split, model, seed), trained once
and shared by every perturbation of it.

Its rank lists are cached (``<store>.baselines/<key>.npz`` or the executor's ``cache_uri``,
written atomically, :class:`~recaudit.experiment.ArrayCache`, with the seconds its training
and ranking took) and read by the rest of its group, worker and re-run. In a process pool,
:func:`prime_baseline` makes it before a group of trials, which then all start at once (or
beside them, for trials that take their baseline last:
:func:`recaudit.audit._runner.baseline_last`); on Ray, :func:`make_baseline` runs as a task of
its own and its :class:`Baseline` reaches each trial of the group as an object reference
(``run_trial``'s ``baseline``). Each baseline's seconds are counted once, in the timings of the
first trial of its group (:meth:`Baseline.counted`).

What is cached is what the trial's measures read and no more: each query's first
``metrics.depth`` items (every item for ``depth = "full"``), as the smallest unsigned integer
type that holds the catalogue's codes (:func:`code_dtype`: one byte a rank up to 256 items,
two up to 65,536), compressed, with the depth the lists were asked at (``depth``: 0 for the
whole catalogue). A cached entry serves any trial that compares no deeper than it holds: its
lists are cut to the trial's depth, and a list of ``(-score, item)`` order cut to ``d`` items
is the list a ranking at depth ``d`` gives, so the numbers are those of a baseline trained
for that depth. An entry of an earlier version (``int32`` lists, no ``depth``: the whole
catalogue unless the audit set a depth) is read the same way; one that holds fewer items
than a trial compares, and may not be the model's whole ranking, is trained again with a
warning that says why (:func:`_cached`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import time
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from recaudit import _progress as progress
from recaudit.audit._context import _fit, cache_key
from recaudit.audit._spec import TrialSpec
from recaudit.data import Interactions, Queries, RankLists, Split
from recaudit.experiment import ArrayCache, prepare
from recaudit.models import checked_rank

__all__ = ["Baseline", "code_dtype", "make_baseline", "prime_baseline", "train_baseline"]


def _local(cache: str | os.PathLike | None) -> Path | None:
    """``cache`` as a local directory, ``None`` when it is absent or a URL (``s3://...``)."""
    if cache is None or "://" in str(cache):
        return None
    return Path(cache)


def _anchor(trial: TrialSpec, split: Split, cache_dir: Path | None) -> Any:
    """What a stabilised model may read of the unperturbed model (``recaudit.stabilise``)."""
    if trial.model.stabilise is None:
        return None
    from recaudit.stabilise import Anchor

    return Anchor(split.train, trial.seed, cache_dir)


def _fit_rank(trial: TrialSpec, train: Interactions, split: Split, seed: int,
              cache_dir: Path | None = None, queries: Queries | None = None,
              phase: str = "perturbed") -> tuple[RankLists, float, float, float]:
    """The lists of the model fitted to ``train``, the fit's and the ranking's seconds, and
    the fit's seconds spent before this process (a resumed or a kept finished fit)."""
    progress.report(phase=f"{phase} fit")
    model, fit_s, before = _fit(trial, train, seed, anchor=_anchor(trial, split, cache_dir))
    try:
        progress.report(phase=f"{phase} ranking")
        t1 = time.perf_counter()
        ranks = checked_rank(model, split.queries if queries is None else queries,
                             k=trial.metrics.depth)
    finally:
        if hasattr(model, "close"):  # models with files on disk (command models) remove them
            model.close()
    return ranks, fit_s, time.perf_counter() - t1, before


@dataclass(frozen=True)
class Baseline:
    """A baseline's rank lists (``items``, as cached), the seconds it took to train and rank
    (kept with the cached lists; 0 for an entry cached before they were kept), whether this
    process trained it (``trained_here``; a baseline read from the cache or made by another job
    was not) and, if it did, the seconds of its fit spent before (``before``: a fit resumed
    from its kept state)."""

    items: np.ndarray
    fit_seconds: float = 0.0
    rank_seconds: float = 0.0
    trained_here: bool = False
    before: float = 0.0

    def counted(self, charge: bool) -> tuple[float, float, float]:
        """``(fit, rank, carried)`` seconds a trial counts for this baseline — the one rule:
        its seconds count in the trial that trained it, else in the trial charged with it
        (the first pending trial of its group); ``carried``, the part the trial's total time
        adds to its own wall time: a baseline made elsewhere, all of it; one trained here,
        what its fit took before this process."""
        if not (self.trained_here or charge):
            return 0.0, 0.0, 0.0
        carried = self.before if self.trained_here else self.fit_seconds + self.rank_seconds
        return self.fit_seconds, self.rank_seconds, carried


def train_baseline(trial: TrialSpec, split: Split, cache: str | os.PathLike | None = None
                   ) -> tuple[RankLists, float, float, float]:
    """Train the unperturbed model of ``trial`` and rank the test queries (the one place a
    baseline is trained): the lists, the fit's and the ranking's seconds and the fit's seconds
    before this process (:func:`_fit_rank`); ``cache``: the audit's baseline cache (a
    stabilised model keeps what it derives there when it is a local directory)."""
    return _fit_rank(trial, split.train, split, trial.seed, _local(cache), phase="baseline")


def code_dtype(n_items: int) -> np.dtype:
    """The smallest integer type a cached list of a catalogue of ``n_items`` items is kept in:
    ``uint8`` for codes up to 255 (at most 256 items), ``uint16`` up to 65,535, else
    ``int32`` (what :class:`~recaudit.data.RankLists` holds)."""
    if n_items <= 1 << 8:
        return np.dtype(np.uint8)
    if n_items <= 1 << 16:
        return np.dtype(np.uint16)
    return np.dtype(np.int32)


def _baseline(trial: TrialSpec, log_: Interactions, split: Split,
              cache: str | os.PathLike | None, given: Baseline | None = None) -> Baseline:
    """The baseline of ``trial`` from its one source in order: ``given`` (made by another job:
    Ray's shared task), else the ``cache``, else trained here (and written to the cache)."""
    if given is not None:
        if len(given.items) != len(split.queries):
            raise ValueError(f"baseline has {len(given.items)} rank lists for "
                             f"{len(split.queries)} queries")
        return dataclasses.replace(given, trained_here=False)
    key = cache_key(trial, trial.baseline_key(log_.fingerprint()))
    store = None if cache is None else ArrayCache(cache)
    depth, n_items = trial.metrics.depth, split.queries.n_items
    hit = None if store is None else _cached(store, key, depth, n_items)
    if hit is not None:
        return hit
    with _training(_local(cache), key):   # one process trains it; the others wait and read
        hit = None if store is None else _cached(store, key, depth, n_items, quiet=True)
        if hit is not None:
            return hit
        ranks, fit_s, rank_s, before = train_baseline(trial, split, cache)
        if store is not None:
            store.put(key, compress=True, items=ranks.items.astype(code_dtype(n_items)),
                      depth=np.asarray(depth or 0, dtype=np.int64),
                      fit_seconds=np.asarray(fit_s), rank_seconds=np.asarray(rank_s))
    return Baseline(ranks.items, fit_s, rank_s, trained_here=True, before=before)


def _cached(store: ArrayCache, key: str, depth: int | None, n_items: int,
            quiet: bool = False) -> Baseline | None:
    """The cached baseline ``key`` cut to ``depth`` items (``None``: the whole catalogue of
    ``n_items``), or ``None`` when there is none or it holds too few items, which a warning
    says (unless ``quiet``: the caller has said it already).

    An entry holding ``w`` items serves a trial that compares ``depth`` when ``w`` reaches
    it (``min(depth, n_items)``, or ``n_items`` for the whole catalogue), or when ``w`` is
    all the model ranks: the entry was asked for the whole catalogue (its ``depth`` is 0) or
    for more than ``w`` items. An entry of an earlier version records no depth, so fewer
    items than the trial needs might be a cut it was asked for: it is trained again."""
    hit = store.get(key)
    if hit is None:
        return None
    items = hit["items"]
    width = items.shape[1]
    need = n_items if depth is None else min(depth, n_items)
    asked = int(hit["depth"]) if "depth" in hit else None
    whole = asked is not None and (asked == 0 or width < asked)
    if width < need and not whole:
        if not quiet:
            from recaudit.errors import RecauditWarning

            held = ("by an earlier version of recaudit, which did not record the depth it "
                    "was asked for" if asked is None else f"at depth {asked}")
            warnings.warn(f"baseline {key} was cached {held}: its lists hold {width} items "
                          f"of each query's ranking and this trial compares "
                          f"{'the whole catalogue' if depth is None else depth}; it is "
                          "trained again (and the deeper lists replace the cached ones)",
                          RecauditWarning, stacklevel=3)
        return None
    if depth is not None and width > depth:
        items = items[:, :depth]
    fit, rank = (float(hit[name]) if name in hit else 0.0 for name in ("fit_seconds",
                                                                      "rank_seconds"))
    return Baseline(items, fit, rank)


@contextlib.contextmanager
def _training(folder: Path | None, key: str) -> Iterator[None]:
    """Hold the lock of baseline ``key`` in the local cache ``folder`` (``<key>.lock``, an
    ``flock``: released by the system when its holder dies) while the block trains it, so a
    trial that waits for a baseline another worker is training (a process pool's priming, see
    :func:`run_trial`) reads it instead of training it again; no lock without a local cache.
    The file is removed once the baseline is cached (whoever takes the lock then finds it)."""
    if folder is None:
        yield
        return
    import fcntl

    from recaudit._files import writing

    with writing(folder, action="create the folder"):
        folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{key}.lock"
    with writing(path):
        handle = open(path, "a")
    with handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            path.unlink(missing_ok=True)
            fcntl.flock(handle, fcntl.LOCK_UN)


def make_baseline(trial: TrialSpec, cache: str | os.PathLike | None = None) -> Baseline:
    """The baseline of ``trial``: read from ``cache`` (a directory or URL), else trained (and
    written there); its seconds are those of the training, kept with the cached lists."""
    data, split = prepare(trial.dataset, trial.split)
    return _baseline(trial, data, split, cache)


def prime_baseline(trial: TrialSpec, cache: str | os.PathLike) -> None:
    """Make sure ``cache`` holds the baseline of ``trial`` (trained and written if it does
    not; an entry already there is not read). The process pool runs it before a group of
    trials, which then all read the lists, the first of them counting their seconds."""
    data, split = prepare(trial.dataset, trial.split)
    if ArrayCache(cache).has(cache_key(trial, trial.baseline_key(data.fingerprint()))):
        return
    progress.report(label=f"{trial.model.label} · baseline · seed {trial.seed}",
                    phase="baseline fit")
    _baseline(trial, data, split, cache)
