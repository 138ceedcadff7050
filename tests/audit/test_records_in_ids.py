"""Perturbation records name the edited interactions in the data's own ids and timestamps."""

import json

import pytest

from recaudit.audit import AuditConfig, AuditStore, DatasetSpec, ModelSpec, run_audit


def test_records_carry_the_users_own_ids(tmp_path):
    lines = ["user,item,timestamp"]
    for u in range(30):
        for j in range(12):
            lines.append(f"u{u},film-{(u * 5 + j * 7) % 40},{10_000 + 100 * u + j}")
    path = tmp_path / "log.csv"
    path.write_text("\n".join(lines) + "\n")
    cfg = AuditConfig(datasets=(DatasetSpec("mine", path=str(path)),),
                      models=(ModelSpec("gru4rec", {"epochs": 1, "embedding_dim": 8,
                                                    "hidden_dim": 8}),),
                      perturbations=("random-delete", "random-replace-random"), seeds=(0,),
                      output=str(tmp_path / "a.duckdb"))
    run_audit(cfg)
    rows = {line.split(",")[2]: line.split(",")[:2] for line in lines[1:]}
    with AuditStore(cfg.output, read_only=True) as s:
        records = [json.loads(r) for r in s.sql("SELECT record FROM perturbations").record]
    deleted = next(r for r in records if r["kind"] == "delete")["in_your_ids"]["deleted"]
    (d,) = deleted
    assert rows[str(d["timestamp"])] == [d["user"], d["item"]]    # the very line of the file
    assert d["user"].startswith("u") and d["item"].startswith("film-")
    rep = next(r for r in records if r["kind"] == "replace")["in_your_ids"]["replaced"][0]
    assert rows[str(rep["timestamp"])] == [rep["user"], rep["item"]]
    assert rep["new_item"].startswith("film-") and rep["new_item"] != rep["item"]


def test_export_writes_both_top_k_lists_in_the_users_ids(tmp_path):
    import pandas as pd

    from recaudit.cli import main

    lines = ["user,item,timestamp"] + [f"u{u},film-{(u * 5 + j * 7) % 40},{100 * u + j}"
                                       for u in range(30) for j in range(12)]
    path = tmp_path / "log.csv"
    path.write_text("\n".join(lines) + "\n")
    store = tmp_path / "a.duckdb"
    assert main(["audit", "--dataset", str(path), "--seeds", "1", "-p", "random-delete",
                 "--k", "5", "--param", "epochs=1", "--param", "embedding_dim=8",
                 "--param", "hidden_dim=8", "--output", str(store)]) == 0
    assert main(["export", str(store), str(tmp_path / "out"), "--format", "csv"]) == 0
    rows = pd.read_csv(tmp_path / "out" / "query_results.csv")
    base = rows.top_base.map(json.loads)
    pert = rows.top_pert.map(json.loads)
    assert (base.map(len) == 5).all() and (pert.map(len) == 5).all()
    assert all(i.startswith("film-") for lst in base for i in lst)
    # the stored Jaccard@k is the overlap of the two exported lists
    jac = [len(set(a) & set(b)) / len(set(a) | set(b)) for a, b in zip(base, pert)]
    assert rows.jaccard.to_numpy() == pytest.approx(jac)
