"""An audit's rank lists as run files ``recaudit compare`` reads (``recaudit export
--rank-lists``).

The store keeps, per trial and test query, both models' top ``k`` (``top_base``,
``top_pert``: the data's own item ids). :func:`export_rank_lists` writes them as one table per
list set, with the columns ``query`` (the query's number: the same query in every trial of one
dataset and split), ``user`` and ``target`` (the query's user and held-out item in the data's
own ids, when the data can be read here; else their internal codes, with a warning), ``rank``
(1 = best) and ``item``::

    rank-lists/<dataset>/<model>/seed-<seed>/baseline.csv       (names of portable characters)
    rank-lists/<dataset>/<model>/seed-<seed>/<perturbation>.csv     (-draw-<d> for draws > 0)
    rank-lists/index.csv   one row per trial: its labels and its two files

so ``recaudit compare .../baseline.csv .../casper-delete.csv`` measures the same pair again.
These are top-``k`` lists: their RBO is top-``k`` RBO, not the audit's, which compares deeper
rankings (``metrics.depth``: 100 items by default, or the whole catalogue).
"""

from __future__ import annotations

import hashlib
import json
import re
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from recaudit.audit._store import AuditStore
from recaudit.errors import RecauditError, RecauditWarning

__all__ = ["export_rank_lists"]


def _slug(text: str) -> str:
    """A name of POSIX's portable file-name characters (``A-Z a-z 0-9 . _ -``) for a label:
    ``=`` becomes ``-``, any run of other characters ``_``, and the name never starts with
    ``-`` or ``.`` (an option to a shell command, a hidden file): ``gru4rec(epochs=1,
    embedding_dim=8)`` is ``gru4rec_epochs-1_embedding_dim-8``."""
    out = re.sub(r"[^A-Za-z0-9._-]+", "_", str(text).replace("=", "-"))
    return out.strip("_").lstrip("-.") or "_"


def _names(labels: list[str]) -> dict[str, str]:
    """A file name per label, distinct (a hash is added where two labels would collide)."""
    slugs = {lab: _slug(lab) for lab in labels}
    seen: dict[str, int] = {}
    for s in slugs.values():
        seen[s] = seen.get(s, 0) + 1
    return {lab: s if seen[s] == 1 else f"{s}-{hashlib.sha1(lab.encode()).hexdigest()[:6]}"
            for lab, s in slugs.items()}


def _own_ids(spec: dict[str, Any], fingerprint: str | None) -> tuple[Any, Any] | None:
    """The data's user and item ids (by internal code) of a trial's dataset, when it can be
    read here and is the data the trial ran on; None otherwise."""
    from recaudit.errors import RecauditError as _Error
    from recaudit.experiment import DatasetSpec, SplitSpec, prepare

    try:
        log, _ = prepare(DatasetSpec.from_dict(spec["dataset"]),
                         SplitSpec.from_dict(spec["split"]))
    except (_Error, OSError, KeyError):
        return None
    if fingerprint is not None and log.fingerprint() != fingerprint:
        return None
    return np.asarray(log.user_ids), np.asarray(log.item_ids)


def _frame(rows: pd.DataFrame, column: str, ids: tuple[Any, Any] | None) -> pd.DataFrame:
    lists = rows[column].map(json.loads)
    n = lists.map(len).to_numpy()
    user, target = rows["user"].to_numpy(), rows["target"].to_numpy()
    if ids is not None:
        user, target = ids[0][user], ids[1][target]
    return pd.DataFrame({"query": np.repeat(rows["query"].to_numpy(), n),
                         "user": np.repeat(user, n), "target": np.repeat(target, n),
                         "rank": np.concatenate([np.arange(1, k + 1) for k in n]) if len(n)
                         else np.zeros(0, np.int64),
                         "item": [i for lst in lists for i in lst]})


def _write(frame: pd.DataFrame, path: Path, fmt: str) -> Path:
    from recaudit._files import atomic_write

    if fmt == "parquet":
        atomic_write(path, lambda tmp: frame.to_parquet(tmp, index=False))
    else:
        atomic_write(path, lambda tmp: frame.to_csv(tmp, index=False))
    return path


def export_rank_lists(store: str | Path, directory: str | Path, fmt: str = "csv"
                      ) -> list[Path]:
    """Write every trial's two top-``k`` lists under ``directory/rank-lists`` as ``csv`` or
    ``parquet`` run files (module docstring); returns the files written, the index last."""
    if fmt not in ("csv", "parquet"):
        raise RecauditError(f"unknown export format {fmt!r}; use parquet or csv")
    root = Path(directory) / "rank-lists"
    with AuditStore(store, read_only=True) as s:
        if "trials" not in s.tables() or not s.count("trials"):
            raise RecauditError(f"{store} holds no audit trials: no rank lists to export")
        trials = s.trials()
        kept = "top_base" in s._present("query_results") and s.sql(
            "SELECT count(*) AS n FROM query_results WHERE top_base IS NOT NULL").n[0]
        if not kept:
            raise RecauditError(f"{store} keeps no rank lists (written by a recaudit older than "
                                "the top_base and top_pert columns); run the audit again into "
                                "a new store to keep them")
        datasets = _names(list(dict.fromkeys(trials.dataset)))
        models = _names(list(dict.fromkeys(trials.model_label)))
        ids_of: dict[str, Any] = {}
        written: dict[str, Path] = {}
        index, out, skipped = [], [], 0
        for t in trials.itertuples(index=False):
            spec = json.loads(t.spec) if isinstance(t.spec, str) else t.spec
            data_key = json.dumps([spec.get("dataset"), spec.get("split")], sort_keys=True)
            if data_key not in ids_of:
                ids_of[data_key] = _own_ids(spec, getattr(t, "data_fingerprint", None))
                if ids_of[data_key] is None:
                    warnings.warn(f"{t.dataset}: its data cannot be read here (or has changed "
                                  "since the audit), so the rank lists give its users and "
                                  "targets as internal codes; the items are the data's own "
                                  "ids", RecauditWarning, stacklevel=2)
            rows = s.sql("SELECT query, user, target, top_base, top_pert FROM query_results "
                         "WHERE trial_id = ? ORDER BY query", [t.trial_id])
            if rows.top_base.isna().any() or rows.top_pert.isna().any():
                skipped += 1  # a trial written before the lists were kept
                continue
            folder = root / datasets[t.dataset] / models[t.model_label] / f"seed-{t.seed}"
            base = folder / f"baseline.{fmt}"
            if t.baseline_key not in written:
                out.append(_write(_frame(rows, "top_base", ids_of[data_key]), base, fmt))
                written[t.baseline_key] = base
            draw = int(t.draw or 0)
            pert = folder / (f"{_slug(t.perturbation)}" + (f"-draw-{draw}" if draw else "")
                             + f".{fmt}")
            out.append(_write(_frame(rows, "top_pert", ids_of[data_key]), pert, fmt))
            index.append({"trial_id": t.trial_id, "dataset": t.dataset, "model": t.model_label,
                          "perturbation": t.perturbation, "seed": t.seed, "draw": draw,
                          "baseline": written[t.baseline_key].relative_to(root).as_posix(),
                          "perturbed": pert.relative_to(root).as_posix()})
    if skipped:
        warnings.warn(f"{skipped} trial(s) of {store} were written before the rank lists were "
                      "kept: they have no files", RecauditWarning, stacklevel=2)
    out.append(_write(pd.DataFrame(index), root / "index.csv", "csv"))
    return out
