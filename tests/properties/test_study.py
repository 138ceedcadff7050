"""Shriver 2018's study: cross-validated precision/recall, Table 3.4 and the evolving dataset."""

from __future__ import annotations

import numpy as np
import pytest

from recaudit.data import Interactions
from recaudit.models import create
from recaudit.properties import (
    STUDY_PROPERTIES,
    cross_validate,
    evolving_study,
    percent_change,
    property_table,
)


def small_log(n_users=25, n_items=30, per_user=10, seed=0) -> Interactions:
    rng = np.random.default_rng(seed)
    u = np.repeat(np.arange(n_users), per_user)
    i = np.concatenate([rng.choice(n_items, per_user, replace=False) for _ in range(n_users)])
    r = rng.integers(1, 11, len(u)) / 2.0
    ts = rng.permutation(len(u))
    attrs = {j: frozenset({f"g{j % 4}"}) for j in range(n_items)}
    return Interactions.from_codes(u, i, ts, r, n_users=n_users, n_items=n_items,
                                   item_attributes=attrs)


class Oracle:
    """Recommends exactly what the fold held out (or, inverted, what it trained on)."""

    calls: list[np.ndarray] = []

    def __init__(self, full: Interactions, invert: bool = False) -> None:
        self.full, self.invert = full, invert

    def fit(self, train, *, seed):
        self.train = train
        return self

    def recommend(self, users, k, *, candidates=None):
        Oracle.calls.append(np.asarray(users))
        out = np.full((len(users), k), -1, dtype=np.int32)
        tr = set(zip(self.train.user.tolist(), self.train.item.tolist(), strict=True))
        for row, u in enumerate(users):
            items = [i for uu, i in zip(self.full.user, self.full.item, strict=True) if uu == u]
            pick = [i for i in items if ((u, i) in tr) == self.invert][:k]
            out[row, :len(pick)] = pick
        return out, np.zeros(out.shape, np.float32)


def test_cross_validation_oracle_and_folds():
    log = small_log()
    Oracle.calls = []
    p, r = cross_validate(lambda: Oracle(log), log, k=5, folds=5, seed=3)
    assert (p, r) == (1.0, 1.0)                    # 2 held-out items per user (20 % of 10)
    users = np.concatenate(Oracle.calls)
    assert sorted(users.tolist()) == list(range(25))   # every user tested exactly once
    assert len(Oracle.calls) == 5 and all(len(c) == 5 for c in Oracle.calls)
    assert cross_validate(lambda: Oracle(log, invert=True), log, k=5, seed=3) == (0.0, 0.0)


def test_cross_validation_precision_uses_ranked_count():
    log = small_log()
    # k = 10 but the oracle ranks only the 2 held-out items: precision 2/2, recall 2/2
    assert cross_validate(lambda: Oracle(log), log, k=10, seed=0) == (1.0, 1.0)


def test_cross_validation_is_deterministic_and_validates():
    log = small_log()
    a = cross_validate(lambda: create("funksvd", iterations=5), log, k=5, seed=1)
    b = cross_validate(lambda: create("funksvd", iterations=5), log, k=5, seed=1)
    assert a == b and 0 <= a[0] <= 1 and 0 <= a[1] <= 1
    with pytest.raises(ValueError, match="folds"):
        cross_validate(lambda: Oracle(log), log, folds=1)


def test_percent_change_by_hand():
    got = percent_change([10, 12, 6, 6, 0, 0, 3])
    np.testing.assert_allclose(got, [20.0, 50.0, 0.0, 100.0, 0.0, np.inf])


def test_property_table_rows_and_columns():
    log = small_log()
    table = property_table({"slope-one": lambda: create("slope-one"),
                            "funksvd": lambda: create("funksvd", iterations=5)}, log, k=3,
                           folds=2)
    assert list(table.columns) == ["slope-one", "funksvd"]
    assert list(table.index) == ["Precision", "Recall"] + [p.label for p in STUDY_PROPERTIES]
    assert table.loc["NRANKS (min, >=)", "funksvd"] == 3      # 20 unseen items per user
    assert table.loc["NUPRL (max, <=)", "funksvd"] >= 1


class Recorder:
    """Ranks the lowest-coded allowed unseen items; records the candidate masks it gets."""

    masks: list = []
    fits: list = []

    def fit(self, train, *, seed):
        self.train = train
        Recorder.fits.append(train)
        return self

    def recommend(self, users, k, *, candidates=None):
        Recorder.masks.append(None if candidates is None else candidates.copy())
        n = self.train.n_items
        ok = np.ones(n, bool) if candidates is None else candidates
        out = np.full((len(users), k), -1, dtype=np.int32)
        for row, u in enumerate(users):
            seen = set(self.train.item[self.train.user == u].tolist())
            pick = [i for i in range(n) if ok[i] and i not in seen][:k]
            out[row, :len(pick)] = pick
        return out, np.zeros(out.shape, np.float32)


def test_evolving_study_restricts_items_and_summarises():
    log = small_log()
    # timestamps are a permutation of 0..249 (seconds from 1970): every step ends in 1970;
    # items 0..4 "released" in 1971 must never be candidates, item 5 (unknown year) may be
    years = np.full(log.n_items, 1960.0)
    years[:5] = 1971
    years[5] = np.nan
    Recorder.masks, Recorder.fits = [], []
    steps, summary = evolving_study({"rec": Recorder}, log, k=3, item_years=years, folds=2)
    assert len(steps) == 6 and steps["fraction"].tolist() == [0.5, 0.6, 0.7, 0.8, 0.9, 1.0]
    for m in Recorder.masks:
        assert not m[:5].any() and m[5:].all()
    assert "IANR" not in summary.index and "NRI" in summary.index
    nri = steps["NRI"].astype(float).to_numpy()
    assert summary.loc["NRI", "rec"] == pytest.approx(np.max(percent_change(nri)))
    assert summary.attrs["robust"].loc["NRI", "rec"] == (summary.loc["NRI", "rec"] < 5)
    # every step's full model is trained on exactly the earliest 50, 60, ... % of ratings
    full_fits = Recorder.fits[2::3]                       # 2 CV folds, then the full fit
    for frac, train in zip([0.5, 0.6, 0.7, 0.8, 0.9, 1.0], full_fits, strict=True):
        n = int(np.ceil(frac * 250))
        assert len(train) == n and sorted(train.timestamp.tolist()) == list(range(n))


def test_evolving_rejects_bad_fraction():
    with pytest.raises(ValueError, match="fractions"):
        evolving_study({"rec": Recorder}, small_log(), fractions=(0.0, 1.0), accuracy=False)
