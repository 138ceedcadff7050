"""A small real audit for the "who is affected" tests (audit, report), and what they recompute
it from; its fixture is registered in ``tests/conftest.py``.

The log has string ids (``u00``, ``film-07``), a user attribute that is categorical (``plan``)
and one that is numeric (``age``). Users ``u00``..``u07`` interact only at the very beginning:
the global temporal split leaves them without a test query, and CASPER's deletion (the root
that reaches the most interactions) edits one of their interactions, so an edit touches a
user outside the test set.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import duckdb
import numpy as np
import pandas as pd
import pytest

PERTURBATIONS = ("casper-delete", "random-replace-popular", "seed-only")


def write_log(path: Path) -> pd.DataFrame:
    rng = np.random.default_rng(7)
    weights = 1 / np.arange(1, 31)
    weights /= weights.sum()
    rows = []
    for u in range(36):
        if u < 8:
            ts = 1 + u * 12 + np.arange(12)
        else:
            ts = np.sort(rng.choice(np.arange(1000, 100_000), int(rng.integers(8, 31)),
                                    replace=False))
        for t, i in zip(ts, rng.choice(30, len(ts), p=weights), strict=True):
            rows.append((f"u{u:02d}", f"film-{i:02d}", int(t), "paid" if u % 3 == 0 else "free",
                         18 + (u * 7) % 40))
    frame = pd.DataFrame(rows, columns=["user", "item", "timestamp", "plan", "age"])
    frame.to_csv(path, index=False)
    return frame


@dataclass
class WhoAudit:
    """The store, the log as written, its training part (cut by hand: the first 80 % of rows
    in time order, and rows tied with the last of them), the per-query rows joined with their
    trials, and the perturbation records."""

    store: Path
    log: pd.DataFrame
    train: pd.DataFrame
    rows: pd.DataFrame
    records: dict

    def user_of_code(self) -> dict[int, str]:
        from recaudit.experiment import DatasetSpec, SplitSpec, prepare

        data, _ = prepare(DatasetSpec("mine", path=str(self.store.parent / "log.csv"),
                                      min_user_interactions=0),
                          SplitSpec("global-temporal", 0.8))
        return dict(enumerate(data.user_ids.tolist()))


@pytest.fixture(scope="session")
def who_audit(tmp_path_factory) -> WhoAudit:
    from recaudit.audit import (AuditConfig, DatasetSpec, MetricSpec, ModelSpec, SplitSpec,
                                run_audit)

    folder = tmp_path_factory.mktemp("who")
    log = write_log(folder / "log.csv")
    cfg = AuditConfig(
        datasets=(DatasetSpec("mine", path=str(folder / "log.csv"), min_user_interactions=0),),
        split=SplitSpec("global-temporal", 0.8),
        models=(ModelSpec("gru4rec", {"epochs": 1, "embedding_dim": 8, "hidden_dim": 8}),),
        perturbations=PERTURBATIONS, seeds=(0, 1), metrics=MetricSpec(k=5),
        output=str(folder / "audit.duckdb"))
    run_audit(cfg)
    ordered = log.sort_values("timestamp", kind="stable").reset_index(drop=True)
    cut = int(np.floor(0.8 * len(ordered)))
    train = ordered[ordered.timestamp <= ordered.timestamp[cut - 1]]
    con = duckdb.connect(str(folder / "audit.duckdb"), read_only=True)
    rows = con.execute("SELECT r.*, t.perturbation, t.seed, t.draw FROM query_results r "
                       "JOIN trials t USING (trial_id)").df()
    records = {t: json.loads(r) for t, r in
               con.execute("SELECT trial_id, record FROM perturbations").fetchall()}
    con.close()
    return WhoAudit(folder / "audit.duckdb", log, train.reset_index(drop=True), rows, records)
