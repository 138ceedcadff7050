"""One user's change: the two top-k lists of a test query, what entered and left, and the edit
that made the perturbed data; and the users whose lists moved most.

- :func:`changes` — per trial and test query of one user (the data's own id): the baseline's
  and the perturbed model's top-k lists in the data's own item ids, the items that entered and
  left, the rank moves of the items in both, the query's RBO, Jaccard@k and FRBO@k (as stored),
  and the :class:`Edit` of the trial;
- :func:`most_changed` — per (dataset, model, perturbation) the ``n`` users with the lowest mean
  similarity over their test queries and the perturbation's trials, with the list that moved
  most and the users' slice values (:mod:`._slices`).

The edit comes from the trial's perturbation record (``in_your_ids``: the edited interactions in
the data's own ids and timestamps). Its reach is counted in the interaction graph of Oh et al.
2022 (the IDAG CASPER scores, built with the record's ``max_len``;
:func:`recaudit.perturb.casper_descendants`): ``descendants`` is the number of training
interactions that descend from the edited ones (themselves included; for a deletion by CASPER it
is the deleted root's score), ``user_descendants`` how many of them are this user's. Insertions
count from the interaction the new one follows.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from recaudit.audit._decide import FLOORS
from recaudit.audit._data import DataPaths, StoreData
from recaudit.audit._slices import SLICE_KINDS, _values, slice_kind
from recaudit.audit._store import AuditStore
from recaudit.audit._users import (Group, groups, own_id, own_ids, opened,
                                   user_code)
from recaudit.data import Interactions, date_only, epoch_seconds, time_text
from recaudit.errors import ConfigError, DataError, RecauditError, did_you_mean
from recaudit.experiment import Store

__all__ = ["Edit", "ListChange", "changes", "most_changed"]

#: Edited interactions an :class:`Edit` lists (the user's own first); ``count`` has them all.
SHOWN_EDITS = 20
_SIMILARITIES = ("rbo", "jaccard", "frbo")


@dataclass(frozen=True)
class Edit:
    """The edit that made a trial's perturbed training data.

    kind: ``delete``, ``insert``, ``replace``, ``seed-only``, ``none``, ``retrain`` (the
    window a retrain removed: this user's own removed interactions are listed, ``count`` is
    every removed row, ``users`` the users active in the window) or another family's kind.
    interactions: the edited interactions in the data's own ids (``edit``: deleted, inserted,
    replaced or selected; ``user``, ``item``, ``timestamp``; ``time``, the timestamp as an
    ISO 8601 date where the data's times are dates (:func:`recaudit.data.time_text`);
    ``new_item`` of a replacement, ``before`` of an insertion), this user's first, at most
    :data:`SHOWN_EDITS`. count: all edited interactions. users: the users whose data changed.
    touches_user: whether this user's own data changed. descendants, user_descendants: the
    edit's reach in the interaction graph (module docstring); ``None`` where the record does
    not say which rows it edited."""

    kind: str
    interactions: tuple[Mapping[str, Any], ...] = ()
    count: int = 0
    users: tuple[Any, ...] = ()
    touches_user: bool = False
    descendants: int | None = None
    user_descendants: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "interactions": [dict(x) for x in self.interactions],
                "count": self.count, "users": list(self.users),
                "touches_user": self.touches_user, "descendants": self.descendants,
                "user_descendants": self.user_descendants}


@dataclass(frozen=True)
class ListChange:
    """One user's test query in one trial: both top-k lists (the data's own item ids, best
    first), ``entered`` (in the perturbed list only, in its order), ``left`` (in the baseline's
    only), ``moves`` (``(item, rank before, rank after)``, 1-based, for the items in both),
    the stored similarities and the trial's :class:`Edit`."""

    dataset: str
    model: str
    perturbation: str
    seed: int
    draw: int
    trial_id: str
    user: Any
    query: int
    target: Any
    baseline: tuple[Any, ...]
    perturbed: tuple[Any, ...]
    entered: tuple[Any, ...]
    left: tuple[Any, ...]
    moves: tuple[tuple[Any, int, int], ...]
    rbo: float
    jaccard: float
    frbo: float
    edit: Edit = field(default_factory=lambda: Edit("none"))

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: plain values, NaN as ``None``, moves as ``{item, from, to}``."""
        def num(x: float) -> float | None:
            return None if x != x else float(x)

        return {"dataset": self.dataset, "model": self.model, "user": self.user,
                "perturbation": self.perturbation, "seed": self.seed, "draw": self.draw,
                "trial_id": self.trial_id, "query": self.query, "target": self.target,
                "baseline": list(self.baseline), "perturbed": list(self.perturbed),
                "entered": list(self.entered), "left": list(self.left),
                "moves": [{"item": i, "from": a, "to": b} for i, a, b in self.moves],
                "rbo": num(self.rbo), "jaccard": num(self.jaccard), "frbo": num(self.frbo),
                "edit": self.edit.to_dict()}


def _diff(base: list[Any], pert: list[Any]) -> tuple[tuple, tuple, tuple]:
    in_base, in_pert = set(base), set(pert)
    rank = {item: r for r, item in enumerate(pert, 1)}
    return (tuple(i for i in pert if i not in in_base), tuple(i for i in base if i not in in_pert),
            tuple((i, r, rank[i]) for r, i in enumerate(base, 1) if i in in_pert))


#: CASPER's descendants of an edit, per (training data, rows, window): the same for every
#: user of a trial, and a graph over the whole log to build (the last few kept).
_REACH: dict[tuple[str, tuple[int, ...], int | None], np.ndarray] = {}
_REACH_KEPT = 8


def _descendants(train: Interactions, rows: Sequence[int], max_len: int | None) -> np.ndarray:
    from recaudit.perturb import casper_descendants

    key = (train.fingerprint(), tuple(rows), max_len)
    if key not in _REACH:
        while len(_REACH) >= _REACH_KEPT:
            _REACH.pop(next(iter(_REACH)))
        mask = casper_descendants(train, rows, max_len)
        mask.flags.writeable = False
        _REACH[key] = mask
    return _REACH[key]


def _edit(record: Mapping[str, Any] | None, train: Interactions, user: int) -> Edit:
    """The :class:`Edit` of a perturbation record (:meth:`PerturbationRecord.to_dict` plus
    ``in_your_ids``) for the user with code ``user``."""
    if record is None:
        return Edit("none")
    if record.get("kind") == "retrain":
        return _retrain_edit(record, train, user)
    own = record.get("in_your_ids", {})
    me = own_id(train.user_ids, user)
    # `selected` names the rows an edit chose; the edit itself is in the other lists
    kinds = [k for k in ("deleted", "inserted", "replaced") if own.get(k)] or ["selected"]
    listed = [{"edit": key, **x} for key in kinds for x in own.get(key, ())]
    if epoch_seconds(train.timestamp):  # the data's times are dates: say them as dates
        dates = date_only(train.timestamp)
        listed = [{**x, "time": time_text(x["timestamp"], dates)}
                  if isinstance(x.get("timestamp"), (int, float)) else x for x in listed]
    listed.sort(key=lambda x: x.get("user") != me)  # this user's first (a stable sort)
    users = tuple(own.get("users", ()))
    kind = str(record.get("kind", "none"))
    rows = (record.get("deleted") or [r for r, _, _ in record.get("replaced", ())]
            or record.get("rows") or [])
    reach = mine = None
    if kind in ("delete", "insert", "replace") and rows and \
            record.get("source") in (None, "", train.fingerprint()) and \
            all(isinstance(r, int) and 0 <= r < len(train) for r in rows):
        max_len = record.get("params", {}).get("max_len")
        mask = _descendants(train, rows, max_len if isinstance(max_len, int) else None)
        reach, mine = int(mask.sum()), int((mask & (train.user == user)).sum())
    codes = record.get("users", [])
    return Edit(kind, tuple(listed[:SHOWN_EDITS]), len(listed), users,
                bool(user in codes), reach, mine)


def _retrain_edit(record: Mapping[str, Any], train: Interactions, user: int) -> Edit:
    """The :class:`Edit` of a retrain (:mod:`recaudit.perturb._retrain`): the removed window
    is the training log's rows from ``cut`` on; this user's own rows in it are listed (the
    record keeps the cut, not the rows)."""
    cut = int(record.get("cut", len(train)))
    if record.get("source") not in (None, "", train.fingerprint()):
        cut = len(train)   # made from another log: say nothing of its rows
    rows = cut + np.flatnonzero(train.user[cut:] == user)
    dates = epoch_seconds(train.timestamp) and date_only(train.timestamp)
    listed = []
    for r in rows[:SHOWN_EDITS]:
        t = train.timestamp[r].item()
        x = {"edit": "deleted", "user": own_id(train.user_ids, user),
             "item": own_id(train.item_ids, int(train.item[r])), "timestamp": t}
        if epoch_seconds(train.timestamp):
            x["time"] = time_text(t, dates)
        listed.append(x)
    codes = [int(u) for u in record.get("users", ())]
    return Edit("retrain", tuple(listed), int(record.get("removed", 0)),
                tuple(own_ids(train.user_ids, np.asarray(codes, dtype=np.int64))),
                user in codes)


def _record(s: AuditStore, trial_id: str) -> dict[str, Any] | None:
    if "perturbations" not in s.tables():
        return None
    rows = s.con.execute("SELECT record FROM perturbations WHERE trial_id = ?",
                         [trial_id]).fetchall()
    return json.loads(rows[0][0]) if rows and rows[0][0] is not None else None


def _lists(frame: pd.DataFrame, where: str) -> None:
    if frame["top_base"].isna().any() or frame["top_pert"].isna().any():
        raise RecauditError(f"{where} was written before the top-k lists were kept "
                            "(query_results.top_base is empty): run the audit again with this "
                            "version to see the lists")


def _user_rows(s: AuditStore, g: Group, code: int) -> pd.DataFrame:
    fp = "" if g.fingerprint is None else "AND t.data_fingerprint = ?"
    draw = "coalesce(t.draw, 0)" if "draw" in s._present("trials") else "0"
    cols = ", ".join(f"r.{s._raw(m)} AS {m}" for m in _SIMILARITIES)
    return s.sql(f"""
        SELECT t.trial_id, t.perturbation, t.seed, {draw} AS draw, r.query, r.target, {cols},
               r.top_base, r.top_pert
        FROM query_results r JOIN trials t USING (trial_id)
        WHERE t.dataset = ? AND t.model_label = ? AND t.status = 'done' AND r."user" = ? {fp}
        ORDER BY t.perturbation, t.seed, draw, r.query""",
        [g.dataset, g.model, code] + ([] if g.fingerprint is None else [g.fingerprint]))


def _pick(rows: pd.DataFrame, perturbation: str | None, seed: int | None, draw: int | None,
          all_perturbations: list[str], all_seeds: list[int], where: str) -> pd.DataFrame:
    if perturbation is not None:
        if perturbation not in all_perturbations:
            raise ConfigError(f"{where} holds no perturbation {perturbation!r}."
                              + did_you_mean(perturbation, all_perturbations)
                              + f" It holds {', '.join(all_perturbations)}.")
        rows = rows[rows.perturbation == perturbation]
    if seed is not None and seed not in all_seeds:
        raise ConfigError(f"{where} holds no seed {seed} (its seeds: "
                          f"{', '.join(map(str, all_seeds))})")
    seed = int(rows.seed.min()) if seed is None and len(rows) else seed
    rows = rows[rows.seed == seed]
    if draw is not None:
        if draw not in set(rows.draw):
            raise ConfigError(f"{where} holds no draw {draw} of seed {seed} (draws: "
                              f"{', '.join(map(str, sorted(set(rows.draw))))})")
        return rows[rows.draw == draw]
    return rows[rows.draw == rows.draw.min()] if len(rows) else rows


def changes(store: Store | str | Path, user: Any, *, perturbation: str | None = None,
            seed: int | None = None, draw: int | None = None, model: str | None = None,
            dataset: str | None = None, data: DataPaths = None) -> list[ListChange]:
    """The changes of one user's lists (module docstring): one :class:`ListChange` per trial
    and test query of ``user`` (the data's own id), of ``perturbation`` (default: every one),
    ``seed`` (default: the lowest) and ``draw`` (default: the first), for every model (or
    ``model``) and dataset (or ``dataset``) that has the user.

    Raises :class:`~recaudit.errors.DataError` for a user the data does not have, or one
    without a test query, and :class:`~recaudit.errors.ConfigError` for a perturbation, seed or
    draw the store does not hold. ``data``: the audit's file(s) where they are now, for a store
    that keeps no copy of its data (:mod:`recaudit.audit._data`)."""
    out: list[ListChange] = []
    missing: DataError | None = None  # the user is not in a dataset's data
    found = False
    with opened(store) as s:
        every = groups(s)
        chosen = [g for g in every if (model is None or g.model == model)
                  and (dataset is None or dataset in (g.dataset, g.name))]
        if not chosen:
            models = sorted({g.model for g in every})
            raise ConfigError(f"{s.path} holds no finished trial"
                              + (f" of model {model!r}" if model else "")
                              + (f" on dataset {dataset!r}" if dataset else "") + "."
                              + (did_you_mean(model, models) if model else "")
                              + (f" Its models: {', '.join(models)}." if models else ""))
        trials = s.trials()
        found_data = StoreData(s, data, every)
        for g in chosen:
            log, split = found_data(g)
            try:
                code = user_code(log, user, g.name)
            except DataError as exc:
                missing = missing or exc
                continue
            found = True
            mine = trials[(trials.dataset == g.dataset) & (trials.model_label == g.model)]
            rows = _user_rows(s, g, code)
            if rows.empty:
                continue
            rows = _pick(rows, perturbation, seed, draw, sorted(set(mine.perturbation)),
                         sorted(set(mine.seed)), str(s.path))
            _lists(rows, str(s.path))
            edits: dict[str, Edit] = {}
            for r in rows.itertuples(index=False):
                if r.trial_id not in edits:
                    edits[r.trial_id] = _edit(_record(s, r.trial_id), split.train, code)
                base, pert = json.loads(r.top_base), json.loads(r.top_pert)
                entered, left, moves = _diff(base, pert)
                out.append(ListChange(
                    g.name, g.model, r.perturbation, int(r.seed), int(r.draw), r.trial_id,
                    own_id(log.user_ids, code), int(r.query), own_id(log.item_ids, r.target),
                    tuple(base), tuple(pert), entered, left, moves, float(r.rbo),
                    float(r.jaccard), float(r.frbo), edits[r.trial_id]))
    if not found and missing is not None:
        raise missing
    if not out:
        raise DataError(f"user {user!r} has no test query in this audit: the split kept all "
                        "of the user's interactions for training, so no list of theirs was "
                        "compared", source=str(store))
    return out


def most_changed(store: Store | str | Path, n: int = 10, *, perturbation: str | None = None,
                 metric: str = "rbo", by: Sequence[str] = SLICE_KINDS,
                 users: pd.DataFrame | str | os.PathLike | None = None,
                 data: DataPaths = None) -> pd.DataFrame:
    """Per (dataset, model, perturbation): the ``n`` users whose lists moved most, i.e. with
    the lowest mean ``metric`` over their test queries and the perturbation's trials (ties: the
    lower user code), noise floors left out unless ``perturbation`` names one.

    Columns: ``dataset``, ``model``, ``perturbation``, ``user`` (the data's own id), ``queries``,
    ``rbo``, ``jaccard``, ``frbo`` (means), ``seed``, ``draw``, ``query`` (the user's list that
    moved most) and the user's value of each slice kind in ``by`` (:func:`recaudit.audit.
    slices`; ``recency`` a ``Timedelta`` where the data's times are dates,
    :func:`recaudit.data.epoch_seconds`). ``data``: as :func:`changes`'."""
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise ConfigError(f"n must be an integer >= 1, got {n!r}")
    if metric not in _SIMILARITIES:
        raise ConfigError(f"metric must be one of {', '.join(_SIMILARITIES)}, got {metric!r}")
    for b in by:
        slice_kind(b)
    parts: list[pd.DataFrame] = []
    with opened(store) as s:
        found = StoreData(s, data, groups(s))
        for g in groups(s):
            fp = "" if g.fingerprint is None else "AND t.data_fingerprint = ?"
            draw = "coalesce(t.draw, 0)" if "draw" in s._present("trials") else "0"
            which = "AND t.perturbation = ?" if perturbation is not None else \
                "AND NOT list_contains(?, t.perturbation)"
            m = s._raw(metric)
            top = s.sql(f"""
                WITH per_user AS (
                    SELECT t.perturbation, r."user" AS user_code,
                           count(DISTINCT r.query) AS queries,
                           {", ".join(f"avg(r.{s._raw(x)}) AS {x}" for x in _SIMILARITIES)},
                           arg_min([t.seed, {draw}, r.query], r.{m}) AS worst
                    FROM query_results r JOIN trials t USING (trial_id)
                    WHERE t.dataset = ? AND t.model_label = ? AND t.status = 'done' {fp}
                          {which}
                    GROUP BY t.perturbation, r."user")
                SELECT * FROM per_user
                QUALIFY row_number() OVER (PARTITION BY perturbation
                                           ORDER BY {metric}, user_code) <= ?
                ORDER BY perturbation, {metric}, user_code""",
                [g.dataset, g.model] + ([] if g.fingerprint is None else [g.fingerprint])
                + [perturbation if perturbation is not None else list(FLOORS), int(n)])
            if top.empty:
                continue
            codes = top["user_code"].to_numpy(np.int64)
            worst = np.array(top.pop("worst").tolist(), dtype=np.int64).reshape(-1, 3)
            top = top.assign(seed=worst[:, 0], draw=worst[:, 1], query=worst[:, 2])
            log, split = found(g)
            for b in by:
                top[b] = _values(s, g, b, users, found, log.n_users)[codes]
                if b == "recency" and epoch_seconds(split.train.timestamp):
                    top[b] = pd.to_timedelta(top[b], unit="s")  # a duration, not seconds
            top.insert(0, "user", own_ids(log.user_ids, codes))
            top.insert(0, "model", g.model)
            top.insert(0, "dataset", g.name)
            parts.append(top.drop(columns="user_code"))
    cols = ["dataset", "model", "perturbation", "user", "queries", *_SIMILARITIES, "seed",
            "draw", "query", *by]
    if not parts:
        return pd.DataFrame(columns=cols)
    return pd.concat(parts, ignore_index=True)[cols]
