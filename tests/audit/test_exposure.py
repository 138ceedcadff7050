"""`recaudit.audit.exposure` recomputed with Python sets over the stored JSON lists and pandas
over the log."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps

from recaudit.audit import exposure
from recaudit.audit._exposure import gini


def _gini(x: np.ndarray) -> float:
    """Gini as the mean absolute difference over twice the mean."""
    x = np.asarray(x, dtype=float)
    return float(np.abs(x[:, None] - x[None, :]).sum() / (2 * len(x) ** 2 * x.mean()))


def _interval(y: np.ndarray) -> tuple[float, float]:
    """95 % interval of the grand mean of a seeds x lists table with NaN where a list did not
    change: crossed (seeds and lists) when every list changed in every seed, else over the
    seeds' means only (recaudit.stats' nested design)."""
    s, q = y.shape
    rep = np.nanmean(y, axis=1)
    mean = rep.mean()
    if not np.isnan(y).any():
        a = q * ((rep - mean) ** 2).sum() / (s - 1) / (s * q)
        b = s * ((y.mean(axis=0) - mean) ** 2).sum() / (q - 1) / (s * q)
        h = np.sqrt(sps.t.ppf(0.975, s - 1) ** 2 * a + sps.t.ppf(0.975, q - 1) ** 2 * b)
    else:
        h = sps.t.ppf(0.975, s - 1) * np.std(rep, ddof=1) / np.sqrt(s)
    return mean - h, mean + h


def _by_hand(audit):
    """Per trial: users whose list each item entered / left, appearances, and per list the
    mean popularity of the entered and left items."""
    pop = audit.train.item.value_counts()
    catalogue = sorted(audit.log.item.unique())
    trials = {}
    for tid, g in audit.rows.groupby("trial_id"):
        entered: dict[str, set] = {}
        left: dict[str, set] = {}
        app_b = dict.fromkeys(catalogue, 0)
        app_p = dict.fromkeys(catalogue, 0)
        per_list = []
        for r in g.itertuples():
            base, pert = json.loads(r.top_base), json.loads(r.top_pert)
            e, lf = [i for i in pert if i not in base], [i for i in base if i not in pert]
            for i in e:
                entered.setdefault(i, set()).add(r.user)
            for i in lf:
                left.setdefault(i, set()).add(r.user)
            for i in base:
                app_b[i] += 1
            for i in pert:
                app_p[i] += 1
            pe = np.mean([pop.get(i, 0) for i in e]) if e else np.nan
            pl = np.mean([pop.get(i, 0) for i in lf]) if lf else np.nan
            per_list.append((r.query, bool(e), len(e), pe, pl))
        trials[tid] = {"perturbation": g.perturbation.iloc[0], "seed": g.seed.iloc[0],
                       "entered": {i: len(u) for i, u in entered.items()},
                       "left": {i: len(u) for i, u in left.items()},
                       "app_b": app_b, "app_p": app_p,
                       "lists": pd.DataFrame(per_list, columns=["query", "changed", "moved",
                                                                "pe", "pl"])}
    return trials, pop


@pytest.mark.filterwarnings("ignore:Mean of empty slice:RuntimeWarning")
def test_exposure_recomputed_from_the_lists(who_audit):
    result = exposure(who_audit.store)
    trials, pop = _by_hand(who_audit)
    summary = result.summary.set_index("perturbation")
    assert set(summary.index) == {"casper-delete", "random-replace-popular", "seed-only"}
    for pert in summary.index:
        mine = [t for t in trials.values() if t["perturbation"] == pert]
        s = summary.loc[pert]
        lists = pd.concat([t["lists"] for t in mine])
        assert s.changed == pytest.approx(lists.changed.mean())
        assert s.moved == pytest.approx(lists.moved.mean())
        # popularity: per list, then the mean over seeds of each seed's mean over lists
        for col, v in (("popularity_entered", "pe"), ("popularity_left", "pl")):
            per_seed = [t["lists"][v].mean() for t in mine]
            if np.all(np.isnan(per_seed)):
                assert np.isnan(s[col])
            else:
                assert s[col] == pytest.approx(np.nanmean(per_seed))
        table = np.array([(t["lists"].pe - t["lists"].pl).to_numpy() for t in mine])
        if not np.isnan(table).all():
            assert s.popularity_shift == pytest.approx(np.nanmean(np.nanmean(table, axis=1)))
            assert (s.popularity_shift_ci_low, s.popularity_shift_ci_high) == \
                pytest.approx(_interval(table), nan_ok=True)  # NaN: one changed list
        gb = [_gini(list(t["app_b"].values())) for t in mine]
        gp = [_gini(list(t["app_p"].values())) for t in mine]
        change = np.subtract(gp, gb)
        assert (s.gini_base, s.gini_pert) == pytest.approx((np.mean(gb), np.mean(gp)))
        h = sps.t.ppf(0.975, len(change) - 1) * np.std(change, ddof=1) / np.sqrt(len(change))
        assert s.gini_change == pytest.approx(change.mean())
        assert (s.gini_change_ci_low, s.gini_change_ci_high) == \
            pytest.approx((change.mean() - h, change.mean() + h), abs=1e-12)

        items = result.items[result.items.perturbation == pert].set_index("item")
        moved = set().union(*(set(t["entered"]) | set(t["left"]) for t in mine))
        assert set(items.index) == moved
        for item, r in items.iterrows():
            assert r.entered == pytest.approx(np.mean([t["entered"].get(item, 0) for t in mine]))
            assert r.left == pytest.approx(np.mean([t["left"].get(item, 0) for t in mine]))
            assert r.net == pytest.approx(r.entered - r.left)
            assert r.appearances_base == pytest.approx(np.mean([t["app_b"][item] for t in mine]))
            assert r.appearances_pert == pytest.approx(np.mean([t["app_p"][item] for t in mine]))
            assert r.popularity == pop.get(item, 0)
        order = (items.net.abs().to_numpy(), (items.entered + items.left).to_numpy())
        assert all(order[0][:-1] >= order[0][1:])          # most moved first


def test_the_floor_moves_lists_and_the_edits_less(who_audit):
    s = exposure(who_audit.store).summary.set_index("perturbation")
    assert s.loc["seed-only", "changed"] > s.loc["casper-delete", "changed"]


def test_gini_closed_forms():
    assert gini(np.array([5, 5, 5, 5])) == pytest.approx(0.0)
    assert gini(np.array([0, 0, 0, 8])) == pytest.approx(0.75)       # (n - 1) / n
    assert gini(np.zeros(3)) == 0.0
    rng = np.random.default_rng(3)
    x = rng.integers(0, 20, size=(4, 50))
    assert gini(x) == pytest.approx([_gini(row) for row in x])


def test_a_store_without_lists_is_a_clear_error(tmp_path, who_audit):
    import shutil

    import duckdb

    from recaudit.errors import RecauditError

    copy = tmp_path / "old.duckdb"
    shutil.copy(who_audit.store, copy)
    shutil.copy(who_audit.store.parent / "log.csv", tmp_path / "log.csv")
    con = duckdb.connect(str(copy))
    con.execute("UPDATE query_results SET top_base = NULL, top_pert = NULL")
    con.close()
    with pytest.raises(RecauditError, match="before the top-k lists were kept"):
        exposure(copy)
