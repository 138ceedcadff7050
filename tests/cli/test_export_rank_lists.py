"""Issue 40, item 6: ``recaudit export --rank-lists`` writes an audit's top-k lists in the
data's own ids as run files ``recaudit compare`` reads, and compare gives back the store's
FRBO@k and Jaccard@k of the same pair (both depend on the top k only; FRBO's normalisation
also on the catalogue, the same here: k is at most half of it)."""

from __future__ import annotations

import pandas as pd
import pytest

from recaudit.audit import AuditStore

from ._entry import recaudit_here


def test_exported_lists_compare_to_the_stores_numbers(pop_audit):
    folder, store, _ = pop_audit
    proc = recaudit_here("export", store.name, "out", "--rank-lists", cwd=folder)
    assert proc.returncode == 0, proc.stderr
    root = folder / "out" / "rank-lists"
    index = pd.read_csv(root / "index.csv")
    with AuditStore(store, read_only=True) as s:
        (data,) = s.meta()["data"].values()
        assert data["items"] >= 2 * 5
        trials = s.trials()
        assert sorted(index.trial_id) == sorted(trials.trial_id)
        row = index[index.perturbation == "random-delete"].iloc[0]
        stored = s.sql("SELECT frbo, jaccard FROM query_results WHERE trial_id = ?",
                       [row.trial_id])
    base = pd.read_csv(root / row.baseline)
    assert list(base.columns) == ["query", "user", "target", "rank", "item"]
    assert set(base.user) == {"u0", "u1", "u2"}  # the data's own ids, not internal codes
    assert base.item.str.startswith("song").all() and base.target.str.startswith("song").all()
    assert base.groupby("query")["rank"].apply(list).tolist() == [[1, 2, 3, 4, 5]] * 6
    compared = recaudit_here("compare", f"out/rank-lists/{row.baseline}",
                        f"out/rank-lists/{row.perturbed}", "--k", "5", "-o", "rows.csv",
                        cwd=folder)
    assert compared.returncode == 0, compared.stderr
    rows = pd.read_csv(folder / "rows.csv")
    assert len(rows) == 6
    assert rows.jaccard.mean() == pytest.approx(stored.jaccard.mean(), abs=1e-12)
    assert rows.frbo.mean() == pytest.approx(stored.frbo.mean(), abs=1e-12)
