"""`recaudit.audit.slices` and `user_values`, each figure recomputed from `query_results` and the
log itself (pandas on the CSV, not recaudit's data layer)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps

from recaudit.audit import slices, summary, user_values
from recaudit.errors import ConfigError, DataError
from recaudit.stats import holm, paired_test


def _by_hand(audit, kind: str) -> pd.Series:
    """Per user id with a test query, the value of ``kind``, from the CSV and the rows."""
    train, rows = audit.train, audit.rows
    ids = audit.user_of_code()
    queried = sorted({ids[c] for c in rows.user})
    if kind == "activity":
        v = train.groupby("user").size()
    elif kind == "popularity":
        v = train.item.map(train.item.value_counts()).groupby(train.user).mean()
    elif kind == "recency":
        v = train.timestamp.max() - train.groupby("user").timestamp.max()
    elif kind == "accuracy":  # per query the mean over seeds, then per user the mean
        per = rows.groupby(["seed", "query"]).agg(u=("user", "first"), m=("mrr_base", "mean"))
        q = per.groupby("query").agg(u=("u", "first"), m=("m", "mean"))
        v = q.groupby(q.u.map(ids)).m.mean()
    else:  # column
        v = audit.log.groupby("user")[kind].first()
    return v.reindex(queried).astype(float)


def _bins(values: pd.Series, bins: int) -> pd.Series:
    """Equal-count bins, tied users together: bin of the first user with the same value."""
    first = values.rank(method="min") - 1
    raw = (first * bins // len(values)).astype(int)
    return raw.map({b: i for i, b in enumerate(sorted(raw.unique()))})


def _crossed_interval(y: np.ndarray) -> tuple[float, float]:
    """95 % interval of the grand mean of a replicates x queries table (the two-way random
    effects model, each part with its own t quantile)."""
    s, q = y.shape
    mean = y.mean()
    if np.ptp(y) == 0:
        return mean, mean
    a = q * ((y.mean(axis=1) - mean) ** 2).sum() / (s - 1) / (s * q)
    b = s * ((y.mean(axis=0) - mean) ** 2).sum() / (q - 1) / (s * q)
    h = np.sqrt(sps.t.ppf(0.975, s - 1) ** 2 * a + sps.t.ppf(0.975, q - 1) ** 2 * b)
    return max(0.0, mean - h), min(1.0, mean + h)


def test_the_audit_has_users_without_a_test_query(who_audit):
    ids = who_audit.user_of_code()
    queried = {ids[c] for c in who_audit.rows.user}
    assert {"u00", "u03", "u07"}.isdisjoint(queried)          # the early users
    assert len(queried) < who_audit.log.user.nunique()


@pytest.mark.parametrize("kind", ["activity", "popularity", "recency", "accuracy", "age"])
def test_user_values_are_the_logs(who_audit, kind):
    by = f"column:{kind}" if kind == "age" else kind
    got = user_values(who_audit.store, by).set_index("user").value
    want = _by_hand(who_audit, kind)
    assert sorted(got.index) == list(want.index)            # only users with a test query
    assert got.reindex(want.index).to_numpy() == pytest.approx(want.to_numpy())


def test_activity_slices_recomputed(who_audit):
    out = slices(who_audit.store, "activity", bins=3)
    rows, ids = who_audit.rows, who_audit.user_of_code()
    values = _by_hand(who_audit, "activity")
    slice_of = _bins(values, 3)
    rows = rows.assign(slice=rows.user.map(ids).map(slice_of))
    assert set(out.perturbation) == {"casper-delete", "random-replace-popular", "seed-only"}
    assert len(out) == 3 * slice_of.nunique()
    for r in out.itertuples():
        mine = rows[(rows.perturbation == r.perturbation) & (rows.slice == r.slice_index)]
        members = values[slice_of == r.slice_index]
        assert r.slice == f"[{int(members.min())}, {int(members.max())}]"
        assert (r.low, r.high) == (members.min(), members.max())
        assert r.users == len(members) == mine.user.nunique()
        assert r.queries == mine["query"].nunique()
        for m in ("rbo", "jaccard"):
            table = mine.pivot(index="seed", columns="query", values=m).to_numpy()
            assert getattr(r, m) == pytest.approx(table.mean())
            low, high = _crossed_interval(table)
            assert (getattr(r, f"{m}_ci_low"), getattr(r, f"{m}_ci_high")) == \
                pytest.approx((low, high))


def test_slices_partition_the_queries(who_audit):
    """Query-weighted slice means are the overall means of `summary`."""
    overall = summary(who_audit.store).set_index("perturbation")
    for by in ("activity", "popularity", "accuracy", "recency", "column:plan"):
        out = slices(who_audit.store, by)
        for pert, g in out.groupby("perturbation"):
            assert g.queries.sum() == overall.loc[pert, "queries"]
            for m in ("rbo", "jaccard"):
                weighted = (g.queries * g[m]).sum() / g.queries.sum()
                assert weighted == pytest.approx(overall.loc[pert, m])


def test_tests_against_the_floor_and_between_slices(who_audit):
    out = slices(who_audit.store, "activity", bins=3)
    rows, ids = who_audit.rows, who_audit.user_of_code()
    slice_of = _bins(_by_hand(who_audit, "activity"), 3)
    rows = rows.assign(slice=rows.user.map(ids).map(slice_of))
    floor = rows[rows.perturbation == "seed-only"]
    raw = []
    for r in out.itertuples():
        if r.perturbation == "seed-only":
            raw.append(np.nan)
            continue
        mine = rows[(rows.perturbation == r.perturbation) & (rows.slice == r.slice_index)]
        both = mine.merge(floor, on=["seed", "draw", "query"], suffixes=("", "_f"))
        raw.append(paired_test(both.rbo, both.rbo_f, both.seed, both["query"]).p)
    assert out.p_vs_seed_only.to_numpy() == pytest.approx(holm(raw), nan_ok=True)
    assert out.p_vs_seed_only.isna().sum() == slice_of.nunique()   # the floor's own rows
    for pert, g in out.groupby("perturbation", sort=False):
        per_query = rows[rows.perturbation == pert].groupby("query").agg(
            rbo=("rbo", "mean"), slice=("slice", "first"))
        welch = [sps.ttest_ind(per_query.rbo[per_query.slice == k],
                               per_query.rbo[per_query.slice != k], equal_var=False).pvalue
                 for k in g.slice_index]
        assert g.p_vs_rest.to_numpy() == pytest.approx(holm(welch))


def test_each_slice_against_every_query(who_audit):
    """Issue 47, item 7: the slice's RBO minus the perturbation's overall RBO (summary's),
    with Welch's interval of the slice against the rest (scipy's) scaled by the rest's share
    of the queries."""
    out = slices(who_audit.store, "activity", bins=3)
    overall = summary(who_audit.store).set_index("perturbation").rbo
    rows, ids = who_audit.rows, who_audit.user_of_code()
    slice_of = _bins(_by_hand(who_audit, "activity"), 3)
    rows = rows.assign(slice=rows.user.map(ids).map(slice_of))
    for r in out.itertuples():
        assert r.rbo_vs_all == pytest.approx(r.rbo - overall[r.perturbation], abs=1e-12)
        per_query = rows[rows.perturbation == r.perturbation].groupby("query").agg(
            rbo=("rbo", "mean"), slice=("slice", "first"))
        inside = per_query.slice == r.slice_index
        test = sps.ttest_ind(per_query.rbo[inside], per_query.rbo[~inside], equal_var=False)
        low, high = test.confidence_interval(0.95)
        share = (~inside).mean()
        assert (r.rbo_vs_all_ci_low, r.rbo_vs_all_ci_high) == pytest.approx(
            (share * low, share * high))


def test_categories_edges_and_users_without_a_value(who_audit, tmp_path):
    plan = slices(who_audit.store, "column:plan")
    assert sorted(set(plan.slice)) == ["free", "paid"] and plan.low.isna().all()
    ids = who_audit.user_of_code()
    paid = {ids[c] for c in who_audit.rows.user if int(ids[c][1:]) % 3 == 0}
    assert set(plan[plan.slice == "paid"].users) == {len(paid)}

    cut = slices(who_audit.store, "activity", edges=[15, 25])
    act = _by_hand(who_audit, "activity")
    want = {"< 15": (act < 15).sum(), "[15, 25)": ((act >= 15) & (act < 25)).sum(),
            ">= 25": (act >= 25).sum()}
    got = cut.drop_duplicates("slice").set_index("slice").users
    assert {k: v for k, v in want.items() if v} == got.to_dict()

    # a users table that lists half of the users: the rest form the `no value` slice
    some = sorted(act.index)[::2]
    table = pd.DataFrame({"user": some, "score": np.arange(len(some), dtype=float)})
    table.to_csv(tmp_path / "users.csv", index=False)
    out = slices(who_audit.store, "column:score", users=tmp_path / "users.csv", bins=2)
    counts = out.drop_duplicates("slice").set_index("slice").users
    assert counts["no value"] == len(act) - len(some) and counts.sum() == len(act)
    assert out.slice_index.max() == 2


def test_bad_requests_are_clear(who_audit, tmp_path):
    with pytest.raises(ConfigError, match="activity"):
        slices(who_audit.store, "activty")
    with pytest.raises(ConfigError, match="no column 'height'"):
        slices(who_audit.store, "column:height")
    with pytest.raises(ConfigError, match="increasing"):
        slices(who_audit.store, "activity", edges=[3, 2])
    with pytest.raises(ConfigError, match="bins"):
        slices(who_audit.store, "activity", bins=0)
    pd.DataFrame({"user": ["u10", "u10"], "tier": ["a", "b"]}).to_csv(tmp_path / "t.csv",
                                                                      index=False)
    with pytest.raises(DataError, match="not a user attribute: user u10"):
        slices(who_audit.store, "column:tier", users=tmp_path / "t.csv")
