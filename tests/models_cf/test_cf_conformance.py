"""The shared model conformance kit (recaudit.models.testing) on the rating-based models."""

from __future__ import annotations

import numpy as np
import pytest

from recaudit.models import create
from recaudit.models.testing import RecommenderConformance, planted_log


def rated_planted_log():
    log = planted_log(n_items=60)  # a catalogue much larger than any user history
    rng = np.random.default_rng(0)
    return log.replace(rating=rng.integers(1, 11, size=len(log)) / 2.0)


class _Rated(RecommenderConformance):
    def make_log(self):
        return rated_planted_log()


class TestUserUser(_Rated):
    check_changes = False  # deterministic closed form: the seed is not used

    def make_model(self):
        return create("user-user")


class TestItemItem(_Rated):
    check_changes = False

    def make_model(self):
        return create("item-item")


class TestSlopeOne(_Rated):
    check_changes = False

    def make_model(self):
        return create("slope-one")


class TestWeightedSlopeOne(_Rated):
    check_changes = False

    def make_model(self):
        return create("slope-one", weighted=True)


class TestFunkSVD(_Rated):
    def make_model(self):
        return create("funksvd")


class TestLightFM(_Rated):
    def make_model(self):
        pytest.importorskip("lightfm")
        return create("lightfm", epochs=3, no_components=8)


@pytest.mark.parametrize("name", ["user-user", "item-item", "slope-one"])
def test_deletion_changes_lists_of_deterministic_models(name):
    from recaudit.models.testing import check_deletion_changes, leave_last_out

    check_deletion_changes(lambda: create(name), *leave_last_out(rated_planted_log()))
