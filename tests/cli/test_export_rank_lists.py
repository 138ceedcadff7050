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


def test_exported_folder_names_are_portable(pop_audit):
    # issue 60, item 9: `gru4rec_epochs=1,embedding_dim=8` as a folder name; now POSIX's
    # portable characters only (A-Z a-z 0-9 . _ -), never starting with - or .
    import re

    from recaudit.audit._export import _slug

    assert _slug("gru4rec(epochs=1,embedding_dim=8)") == "gru4rec_epochs-1_embedding_dim-8"
    assert _slug("remove-end-10+inputs") == "remove-end-10_inputs"
    assert _slug('{"name": "casper-delete", "count": 4}') == "name_casper-delete_count_4"
    assert _slug("-x") == "x" and _slug("+++") == "_"
    folder, store, _ = pop_audit
    assert recaudit_here("export", store.name, "out2", "--rank-lists",
                         cwd=folder).returncode == 0
    index = pd.read_csv(folder / "out2" / "rank-lists" / "index.csv")
    for path in [*index.baseline, *index.perturbed]:
        assert all(re.fullmatch(r"[A-Za-z0-9_][A-Za-z0-9._-]*", part)
                   for part in path.split("/")), path
