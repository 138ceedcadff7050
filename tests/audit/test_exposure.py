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


def _logit_interval(mean: float, h: float, lo: float, hi: float) -> tuple[float, float]:
    """``mean +- h`` mapped through the logit of the position in ``[lo, hi]``."""
    p = (mean - lo) / (hi - lo)
    z, d = np.log(p / (1 - p)), h / ((hi - lo) * p * (1 - p))
    return tuple(lo + (hi - lo) / (1 + np.exp(-x)) for x in (z - d, z + d))


def _interval(y: np.ndarray, lo: float, hi: float) -> tuple[float, float]:
    """95 % interval of the grand mean of a seeds x lists table with NaN where a list did not
    change: the seeds' part from the seeds' means, the lists' part from each list's sum of
    weighted residuals (weight 1 / (seeds x the seed's changed lists)) when a list changed in
    two seeds (none when no list did: the seeds' lists are then disjoint), on the logit scale
    of [lo, hi]. A seed in which no list changed has no value: it is left out."""
    y = y[~np.isnan(y).all(axis=1)]
    s = y.shape[0]
    n_s = (~np.isnan(y)).sum(axis=1, keepdims=True)
    rep = np.nanmean(y, axis=1)
    mean = rep.mean()
    a = np.var(rep, ddof=1) / s
    seen = (~np.isnan(y)).any(axis=0)
    per_list = np.nansum((y - mean) / (s * n_s), axis=0)[seen]
    q = len(per_list)
    shared = ((~np.isnan(y)).sum(axis=0) > 1).any()
    b = q / (q - 1) * (per_list ** 2).sum() if shared else 0.0
    h = np.sqrt(sps.t.ppf(0.975, s - 1) ** 2 * a + sps.t.ppf(0.975, q - 1) ** 2 * b)
    return _logit_interval(mean, h, lo, hi)


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
            per_list.append((r.query, r.user, bool(e), len(e), pe, pl, base, pert))
        trials[tid] = {"perturbation": g.perturbation.iloc[0], "seed": g.seed.iloc[0],
                       "entered": {i: len(u) for i, u in entered.items()},
                       "left": {i: len(u) for i, u in left.items()},
                       "app_b": app_b, "app_p": app_p,
                       "lists": pd.DataFrame(per_list, columns=[
                           "query", "user", "changed", "moved", "pe", "pl", "base", "pert"])
                       .sort_values("query", ignore_index=True)}
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
        # the intervals: inside the range of what is possible, on its logit scale
        every = pd.Series(0, index=catalogue(who_audit)).add(pop, fill_value=0)
        lo, hi = every.min(), every.max()  # catalogue items never trained on: 0
        for col, table, (a, b) in (
                ("popularity_entered", _table(mine, "pe"), (lo, hi)),
                ("popularity_left", _table(mine, "pl"), (lo, hi)),
                ("popularity_shift", _table(mine, "pe") - _table(mine, "pl"),
                 (lo - hi, hi - lo))):
            if np.isnan(table).all():
                continue
            assert s[col] == pytest.approx(np.nanmean(np.nanmean(table, axis=1)))
            if (~np.isnan(table).all(axis=1)).sum() > 1:  # two seeds with a value
                assert (s[f"{col}_ci_low"], s[f"{col}_ci_high"]) == \
                    pytest.approx(_interval(table, a, b))
                assert a < s[f"{col}_ci_low"] <= s[col] <= s[f"{col}_ci_high"] < b
        gb = [_gini(list(t["app_b"].values())) for t in mine]
        gp = [_gini(list(t["app_p"].values())) for t in mine]
        change = np.subtract(gp, gb)
        assert (s.gini_base, s.gini_pert) == pytest.approx((np.mean(gb), np.mean(gp)))
        assert s.gini_change == pytest.approx(change.mean())
        assert (s.gini_change_ci_low, s.gini_change_ci_high) == \
            pytest.approx(_gini_interval(mine, catalogue(who_audit), change), abs=1e-12)

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


def catalogue(audit) -> list:
    return sorted(audit.log.item.unique())


def _table(trials: list[dict], column: str) -> np.ndarray:
    """Seeds x lists of one per-list figure (NaN where nothing entered / left)."""
    return np.array([t["lists"][column].to_numpy(float) for t in trials])


def _gini_interval(trials: list[dict], items: list, change: np.ndarray) -> tuple[float, float]:
    """Gini's change: the trials' part, and the users' part by leaving out each group of
    users (the users with a test query, in code order, dealt into min(20, users) groups by a
    permutation from seed 0) and recomputing both Ginis from the lists that remain."""
    users = sorted(set(trials[0]["lists"].user))
    n_groups = min(20, len(users))
    group = dict(zip(users, np.random.default_rng(0).permutation(len(users)) % n_groups,
                     strict=True))
    theta = np.zeros(n_groups)
    for j in range(n_groups):
        for t in trials:
            kept = t["lists"][[group[u] != j for u in t["lists"].user]]
            counts = {side: pd.Series(0, index=items).add(
                pd.Series([i for lst in kept[side] for i in lst]).value_counts(),
                fill_value=0) for side in ("base", "pert")}
            theta[j] += (_gini(counts["pert"].to_numpy()) - _gini(counts["base"].to_numpy())) \
                / len(trials)
    s = len(change)
    a = np.var(change, ddof=1) / s
    b = (n_groups - 1) / n_groups * ((theta - theta.mean()) ** 2).sum()
    h = np.sqrt(sps.t.ppf(0.975, s - 1) ** 2 * a + sps.t.ppf(0.975, n_groups - 1) ** 2 * b)
    return _logit_interval(change.mean(), h, -1.0, 1.0)


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


# --- the interval of Gini's change, by simulation with a known truth -------------------------

_ITEMS, _K, _USERS = 60, 5, 200
_BASE = -0.8 * np.log(np.arange(1, _ITEMS + 1))   # Zipf-like item appeal
_TOWARD_POPULAR = 0.3 * np.linspace(1, -1, _ITEMS)


def _simulated_trials(rng, n_trials: int, sd_seed: float, users: np.ndarray
                      ) -> tuple[np.ndarray, np.ndarray]:
    """``[trials, users, k]`` top-k lists of a baseline and a perturbed model: a user's scores
    are the items' appeal (each trial's training seed moves it by ``sd_seed``; the perturbation
    pushes popular items up) plus the user's own Gumbel taste, shared by every trial."""
    lists = []
    for shift in (0.0, 1.0):
        appeal = _BASE + shift * _TOWARD_POPULAR \
            + sd_seed * rng.standard_normal((n_trials, 1, _ITEMS))
        lists.append(np.argpartition(-(appeal + users), _K, axis=-1)[..., :_K])
    return lists[0], lists[1]


@pytest.mark.parametrize("n_seeds,sd_seed", [(2, 0.02), (3, 0.2), (5, 0.02)])
def test_gini_change_interval_covers_over_seeds_and_users(n_seeds, sd_seed):
    # the estimand: the expected change for a test set of this many users, each simulation
    # drawing new users and new seeds; the truth by 3,000 independent trials
    from recaudit.audit._exposure import _appearances, _gini_change, _user_groups

    rng = np.random.default_rng(n_seeds * 7 + int(sd_seed * 100))
    group = _user_groups(np.arange(_USERS))
    truth = []
    for _ in range(30):
        b, p = _simulated_trials(rng, 100, sd_seed, rng.gumbel(size=(100, _USERS, _ITEMS)))
        truth += list(gini(_appearances(p, group, _ITEMS)[0])
                      - gini(_appearances(b, group, _ITEMS)[0]))
    truth = float(np.mean(truth))
    hits = trials_alone = 0
    n_sim = 300
    for _ in range(n_sim):
        b, p = _simulated_trials(rng, n_seeds, sd_seed, rng.gumbel(size=(_USERS, _ITEMS)))
        (app_b, without_b), (app_p, without_p) = (_appearances(x, group, _ITEMS) for x in (b, p))
        change = gini(app_p) - gini(app_b)
        mean, low, high = _gini_change(change, without_b, without_p, np.arange(n_seeds), 0.95)
        assert -1 < low <= mean <= high < 1
        hits += low <= truth <= high
        h = sps.t.ppf(0.975, n_seeds - 1) * np.std(change, ddof=1) / np.sqrt(n_seeds)
        trials_alone += mean - h <= truth <= mean + h
    assert hits / n_sim >= 0.93
    if sd_seed < 0.1 and n_seeds > 2:  # the users' part is what the trials cannot show
        assert trials_alone / n_sim < 0.8
