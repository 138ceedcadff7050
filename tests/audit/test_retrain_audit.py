"""A retrain audit end to end (issue 62): two windows and the seed-only floor on the synthetic
data; the records, the window slices (users active and inactive in the window) and the
staleness table, each recomputed from the split's training log (pandas) and the stored rows."""

from __future__ import annotations

import json

import duckdb
import numpy as np
import pandas as pd
import pytest

from recaudit.audit import (AuditConfig, DatasetSpec, MetricSpec, ModelSpec, changes, slices,
                            staleness, summary, window_users)
from recaudit.errors import ConfigError
from recaudit.stats import holm, paired_test

pytest.importorskip("torch")

DAY = 86400
#: the stored labels (the config names the second in ISO 8601: P90D is stored as 90d)
WINDOWS = {"remove-last-30d": 30 * DAY, "remove-last-90d": 90 * DAY}
DATA = DatasetSpec("synthetic", options={"n_users": 200, "n_items": 100})


@pytest.fixture(scope="module")
def audit(tmp_path_factory):
    from recaudit.audit import run_audit
    from recaudit.experiment import prepare

    folder = tmp_path_factory.mktemp("retrain")
    cfg = AuditConfig(datasets=(DATA,),
                      models=(ModelSpec("gru4rec", {"epochs": 1, "embedding_dim": 8,
                                                    "hidden_dim": 8}),),
                      perturbations=("remove-last-30d", "remove-last-P90D", "seed-only"),
                      seeds=(0, 1),
                      metrics=MetricSpec(k=5), output=str(folder / "a.duckdb"))
    run_audit(cfg)
    _, split = prepare(cfg.datasets[0], cfg.split)
    con = duckdb.connect(cfg.output, read_only=True)
    rows = con.execute("SELECT r.*, t.perturbation, t.seed, t.draw, t.finished FROM "
                       "query_results r JOIN trials t USING (trial_id)").df()
    records = con.execute("SELECT t.perturbation, p.record FROM perturbations p JOIN trials t "
                          "USING (trial_id)").fetchall()
    con.close()
    train = split.train.to_df(codes=True)
    return cfg, split, train, rows, records


def _active(train: pd.DataFrame, seconds: float) -> set[int]:
    """Users with an interaction in (T - D, T], from the training log itself."""
    return set(train.user[train.timestamp > train.timestamp.max() - seconds])


def test_the_records_say_what_the_window_removed(audit):
    cfg, split, train, rows, records = audit
    seen = set()
    for label, text in records:
        record = json.loads(text)
        if label == "seed-only":
            assert record["kind"] == "seed-only"
            continue
        seen.add(label)
        seconds = WINDOWS[label]
        inside = train.timestamp > train.timestamp.max() - seconds
        assert record["kind"] == "retrain" and record["removed"] == int(inside.sum())
        assert record["cut"] == len(train) - int(inside.sum())   # the window is the tail
        assert set(record["users"]) == _active(train, seconds)
        assert record["window"] == label.removeprefix("remove-last-")
        assert "in_your_ids" not in record                         # compact: no row list
    assert seen == set(WINDOWS)
    # both seeds of a window remove the same rows: the window draws nothing
    users = window_users(cfg.output)
    assert sorted(users.perturbation) == sorted(WINDOWS)


def test_window_slices_partition_the_queries_by_activity_in_the_window(audit):
    cfg, split, train, rows, _ = audit
    out = slices(cfg.output, "window")
    assert set(out.perturbation) == set(WINDOWS) and set(out.slice) == {"active", "inactive"}
    floor = rows[rows.perturbation == "seed-only"]
    raw = []
    for r in out.itertuples():
        active = _active(train, WINDOWS[r.perturbation])
        mine = rows[rows.perturbation == r.perturbation]
        inside = mine.user.isin(active) if r.slice == "active" else ~mine.user.isin(active)
        got = mine[inside]
        queried = set(mine.user)
        assert r.users == len(queried & active if r.slice == "active" else queried - active)
        assert r.queries == got["query"].nunique()
        # every seed has every query: the grand mean is the plain mean of the rows
        assert r.rbo == pytest.approx(got.rbo.mean())
        assert r.mrr_change == pytest.approx((got.mrr_pert - got.mrr_base).mean())
        f = floor[floor["query"].isin(got["query"])]
        assert r.rbo_seed_only == pytest.approx(f.rbo.mean())
        both = got.merge(floor, on=["seed", "query"], suffixes=("", "_f"))
        raw.append(paired_test(both.rbo, both.rbo_f, both.seed, both["query"]).p)
        assert r.window in ("30d", "90d") and not r.warm
    # the decision against the floor, Holm over every (retrain, slice)
    assert out.p_vs_seed_only.to_numpy() == pytest.approx(holm(raw))
    # a retrain's lists move far less than another seed's: decided on every slice
    assert (out.p_vs_seed_only < 0.05).all() and (out.rbo > out.rbo_seed_only).all()


def test_staleness_orders_the_windows_and_keeps_the_overall_figures(audit):
    cfg = audit[0]
    table = staleness(cfg.output)
    assert list(table.window) == ["30d"] * 3 + ["90d"] * 3
    assert list(table.slice) == ["all", "active", "inactive"] * 2
    overall = summary(cfg.output).set_index("perturbation")
    for r in table[table.slice == "all"].itertuples():
        assert r.rbo == pytest.approx(overall.rbo[r.perturbation])
        assert r.churn == pytest.approx(1 - overall.rbo[r.perturbation])
        assert r.rbo_seed_only == pytest.approx(overall.rbo["seed-only"])
        assert r.p_vs_seed_only == pytest.approx(overall.p_vs_seed_only[r.perturbation])
    assert (table.seconds.to_numpy() == np.repeat([30 * DAY, 90 * DAY], 3)).all()
    assert (table.removed.iloc[3:] > table.removed.iloc[:3].to_numpy()).all()


def test_a_user_active_in_the_window_sees_their_removed_interactions(audit):
    cfg, split, train, rows, _ = audit
    active = sorted(_active(train, 30 * DAY) & set(rows.user))
    user = split.train.user_ids[active[0]].item()
    got = changes(cfg.output, user, perturbation="remove-last-30d")
    edit = got[0].edit
    mine = train[(train.user == active[0]) & (train.timestamp > train.timestamp.max() - 30 * DAY)]
    assert edit.kind == "retrain" and edit.touches_user
    assert [x["timestamp"] for x in edit.interactions] == mine.timestamp.tolist()
    assert edit.count == int((train.timestamp > train.timestamp.max() - 30 * DAY).sum())


def test_a_resumed_retrain_audit_trains_nothing(audit):
    from recaudit.audit import run_audit

    cfg, *_ = audit
    before = duckdb.connect(cfg.output, read_only=True).execute(
        "SELECT trial_id, finished FROM trials ORDER BY trial_id").fetchall()
    run_audit(cfg)
    after = duckdb.connect(cfg.output, read_only=True).execute(
        "SELECT trial_id, finished FROM trials ORDER BY trial_id").fetchall()
    assert after == before and len(before) == 3 * 2


def test_window_is_not_a_user_value(audit):
    from recaudit.audit import user_values

    with pytest.raises(ConfigError, match="retrain's own"):
        user_values(audit[0].output, "window")


def test_retrain_stores_merge(audit, tmp_path):
    """A third seed run elsewhere merges in: its window slices count three seeds."""
    import shutil

    from recaudit.audit import AuditStore, run_audit
    from recaudit.experiment import merge_stores

    cfg = audit[0]
    other = cfg.replace(seeds=(2,), output=str(tmp_path / "b.duckdb"))
    run_audit(other)
    merged = tmp_path / "m.duckdb"
    shutil.copy(cfg.output, merged)
    with AuditStore(merged) as st:
        added = merge_stores(st, other.output)
    assert added["trials"] == 3
    out = slices(merged, "window")
    assert (out.seeds == 3).all() and len(out) == 4


def test_the_changes_command_says_whether_the_user_was_active(audit, capsys):
    from recaudit.cli import main

    cfg, split, train, rows, _ = audit
    active = _active(train, 30 * DAY) & set(rows.user)
    busy = split.train.user_ids[sorted(active)[0]].item()
    idle = split.train.user_ids[sorted(set(rows.user) - active)[0]].item()
    removed = int((train.timestamp > train.timestamp.max() - 30 * DAY).sum())
    for user, words in ((busy, "this user's among them (active in the window)"),
                        (idle, "none of them this user's (inactive in the window)")):
        assert main(["changes", cfg.output, "--user", str(user), "-p", "remove-last-30d"]) == 0
        out = " ".join(capsys.readouterr().out.split())
        n_active = len(_active(train, 30 * DAY))
        assert f"a retrain's window removed {removed} interactions of {n_active} users" in out
        assert words in out
