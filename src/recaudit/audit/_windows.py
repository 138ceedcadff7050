"""Which users a retrain's window made active: the records of ``remove-last-<window>``
trials (:mod:`recaudit.perturb._retrain`) as a store keeps them, read for the window slices
(:func:`recaudit.audit.slices` ``by="window"``)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

from recaudit.audit._store import AuditStore
from recaudit.audit._users import Group, groups, opened
from recaudit.experiment import Store

__all__ = ["WINDOW", "WINDOW_SLICES", "window_users"]

#: The slice kind of a retrain's window: users active in it, users inactive in it.
WINDOW = "window"
#: The labels of the window slices, in order.
WINDOW_SLICES = ("active", "inactive")


def window_users(store: Store | str | Path) -> pd.DataFrame:
    """Per (dataset, model, retrain perturbation), the users active in its window as its
    records name them: ``dataset``, ``model``, ``perturbation``, ``window``, ``removed``
    (rows), ``user_codes`` (sorted int64 array), ``warm``."""
    parts = []
    with opened(store) as s:
        for g in groups(s):
            for label, record in _retrains(s, g).items():
                parts.append({"dataset": g.name, "model": g.model, "perturbation": label,
                              "window": record["window"], "removed": record["removed"],
                              "user_codes": np.asarray(record["users"], dtype=np.int64),
                              "warm": bool(record.get("warm", False))})
    return pd.DataFrame(parts, columns=["dataset", "model", "perturbation", "window",
                                        "removed", "user_codes", "warm"])


def _retrains(s: AuditStore, g: Group) -> dict[str, dict]:
    """The record of every retrain perturbation of the group (its label's first: a window
    draws nothing, so every trial of a label removes the same rows)."""
    if "perturbations" not in s.tables():
        return {}
    fp = "" if g.fingerprint is None else "AND t.data_fingerprint = ?"
    got = s.sql(f"""
        SELECT t.perturbation, any_value(p.record) AS record
        FROM perturbations p JOIN trials t USING (trial_id)
        WHERE t.dataset = ? AND t.model_label = ? AND t.status = 'done' {fp}
          AND json_extract_string(p.record, '$.kind') = 'retrain'
        GROUP BY t.perturbation ORDER BY t.perturbation""",
        [g.dataset, g.model] + ([] if g.fingerprint is None else [g.fingerprint]))
    return {str(label): json.loads(rec) for label, rec in got.itertuples(index=False)}
