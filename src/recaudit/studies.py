"""Every study recaudit runs, as the readers of a results store see them.

A store may hold several studies (an audit, a fuzzing study, a property study and the MIRROR
benchmark can share one file); each study declares its tables, the columns its progress is
counted by and its per-trial summary (:class:`~recaudit.experiment.StudyInfo`, the ``STUDY``
of :mod:`recaudit.audit`, :mod:`recaudit.fuzz`, :mod:`recaudit.properties` and
:mod:`recaudit.simulate`). :func:`status` and :func:`summary` answer ``recaudit status`` and
``recaudit results`` for every study from those declarations; a study that is running
publishes its progress beside the store (:func:`recaudit.experiment.read_progress`), so a store
can be watched while a run holds it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from recaudit import audit, fuzz, properties, simulate
from recaudit.errors import ConfigError, RecauditError, did_you_mean
from recaudit.experiment import Store, StoreBusyError, StudyInfo, read_progress

__all__ = ["STUDIES", "StudyStatus", "get", "present", "status", "summary"]

#: The studies, in the order reports show them.
STUDIES: tuple[StudyInfo, ...] = (audit.STUDY, properties.STUDY, fuzz.STUDY, simulate.STUDY)


def get(kind: str) -> StudyInfo:
    """The study called ``kind`` (``audit``, ``properties``, ``fuzz``, ``mirror``)."""
    kinds = {s.kind: s for s in STUDIES}
    if kind not in kinds:
        raise ConfigError(f"unknown study {kind!r}; studies: {', '.join(kinds)}."
                          + did_you_mean(kind, kinds), key="study")
    return kinds[kind]


def present(store: Store) -> list[StudyInfo]:
    """The studies ``store`` holds results of (their tables present and not empty)."""
    return [s for s in STUDIES if any(store.count(t) for t in s.tables)]


@dataclass(frozen=True)
class StudyStatus:
    """How far a study in a store is: ``done`` finished trials, ``planned`` (``None`` when no
    run recorded its plan), ``breakdown`` (finished trials by the study's columns) and the
    ``progress`` its running (or last) run published."""

    study: StudyInfo
    done: int
    planned: int | None
    breakdown: pd.DataFrame
    progress: dict[str, Any] | None = None


def _planned(store: Store, info: StudyInfo) -> int | None:
    plans = store.plans(info.kind) if "plans" in store.tables() else pd.DataFrame()
    if len(plans):
        return int(plans["trial_id"].nunique())
    cfg = store.meta().get("config") if info.kind == "audit" else None
    if isinstance(cfg, dict):  # an audit stored before plans were recorded: its grid
        return (len(cfg.get("datasets", ())) * len(cfg.get("models", ()))
                * len(cfg.get("seeds", ())) * len(cfg.get("perturbations", ()))
                * int(cfg.get("draws", 1)))
    return None


def status(path: str | Path) -> list[StudyStatus]:
    """The status of every study in the store at ``path``. While a run holds the store, its
    published progress stands in (one entry, the running study's)."""
    path = Path(path)
    progress = read_progress(path)
    try:
        store = Store(path, read_only=True)
    except StoreBusyError:
        if progress is None:
            raise
        info = get(progress["kind"])
        empty = pd.DataFrame(columns=[*info.breakdown, "done"])
        return [StudyStatus(info, int(progress["done"]), int(progress["planned"]), empty,
                            progress)]
    with store:
        out = []
        for info in present(store):
            trials = store.read(info.trials)
            counts = (trials.groupby(list(info.breakdown), dropna=False, sort=True).size()
                      .reset_index(name="done")) if len(trials) else \
                pd.DataFrame(columns=[*info.breakdown, "done"])
            out.append(StudyStatus(info, len(trials), _planned(store, info), counts,
                                   progress if progress and progress.get("kind") == info.kind
                                   else None))
    return out


def summary(path: str | Path, kind: str | None = None, *, decisions: bool = False
            ) -> tuple[StudyInfo, pd.DataFrame]:
    """The per-trial results of the study ``kind`` in the store at ``path`` (``None``: the
    only study it holds; a store with several needs ``kind``); with ``decisions``, one row per
    condition with intervals and tests instead (:attr:`StudyInfo.decisions`)."""
    with Store(path, read_only=True) as store:
        held = present(store)
        if kind is not None:
            info = get(kind)
            if info not in held:
                raise RecauditError(f"{path} holds no {info.title} results; it holds: "
                                    + (", ".join(s.kind for s in held) or "nothing yet"))
        elif len(held) == 1:
            info = held[0]
        elif not held:
            raise RecauditError(f"{path} holds no results yet; run a study into it first "
                                "(recaudit run CONFIG, recaudit audit ..., recaudit fuzz ...)")
        else:
            raise ConfigError(f"{path} holds several studies ({', '.join(s.kind for s in held)})"
                              "; choose one with --study", key="study")
        if not decisions:
            return info, info.summary(store)
        if info.decisions is None:
            raise RecauditError(f"{info.title} values are exact (one deterministic fit per "
                                "condition): there are no intervals to give; use `recaudit "
                                "results` without --summary")
        return info, info.decisions(store)
