"""LightFM adapter (optional extra ``lightfm-next``; skipped cleanly when absent)."""

from __future__ import annotations

import numpy as np
import pytest

from recaudit.data import Interactions

lightfm = pytest.importorskip("lightfm")

from recaudit.models import create  # noqa: E402


def _log():
    rng = np.random.default_rng(0)
    n_users, n_items = 30, 25
    u = rng.integers(0, n_users, 300)
    i = rng.integers(0, n_items - 3, 300)          # the last 3 items have no ratings
    attrs = {j: frozenset({"even" if j % 2 == 0 else "odd", f"g{j % 3}"}) for j in range(n_items)}
    return Interactions.from_codes(u, i, rating=rng.integers(1, 6, 300).astype(float),
                                   n_users=n_users, n_items=n_items, item_attributes=attrs)


def test_deterministic_and_seeded():
    log = _log()
    a = create("lightfm", epochs=3).fit(log, seed=1).rank(log, k=5)
    b = create("lightfm", epochs=3).fit(log, seed=1).rank(log, k=5)
    c = create("lightfm", epochs=3).fit(log, seed=2).rank(log, k=5)
    assert a.equals(b)
    assert not a.equals(c)


def test_unrated_items_are_scorable_through_attributes():
    log = _log()
    model = create("lightfm", epochs=3).fit(log, seed=0)
    scores = model.predict(np.zeros(3, dtype=int), np.arange(22, 25))
    assert np.isfinite(scores).all()
    items, _ = model.recommend(np.arange(30), k=25)
    assert (items >= 0).all() or (items == -1).sum() > 0   # lists only hold unseen items
    seen = np.zeros((30, 25), bool)
    seen[log.user, log.item] = True
    assert not seen[np.arange(30)[:, None], np.where(items >= 0, items, 0)][items >= 0].any()
