""":class:`RecommenderConformance`: the kit as a pytest test class."""

from __future__ import annotations

from recaudit.data import Interactions, Queries
from recaudit.models import checked_fit
from recaudit.models.testing._checks import (check_deletion_changes, check_determinism,
                                             check_global_rng_untouched,
                                             check_inputs_not_mutated, check_numpy_seed,
                                             check_params_round_trip, check_pickling,
                                             check_query_independence, check_rank_shapes,
                                             check_seed_changes, check_targets_not_read,
                                             check_topk_consistent, check_unfitted_use,
                                             leave_last_out, planted_log)

__all__ = ["RecommenderConformance"]


class RecommenderConformance:
    """Pytest mixin: subclass as ``TestX(RecommenderConformance)`` and define ``make_model``.

    Override ``make_log`` to use other data; set ``check_changes = False`` for a model that
    legitimately ignores seeds (e.g. a deterministic closed-form model).
    """

    check_changes: bool = True

    def make_model(self):  # pragma: no cover - must be overridden
        raise NotImplementedError

    def make_log(self) -> Interactions:
        return planted_log()

    def _data(self) -> tuple[Interactions, Queries]:
        return leave_last_out(self.make_log())

    def test_rank_shapes(self) -> None:
        train, queries = self._data()
        check_rank_shapes(checked_fit(self.make_model(), train, seed=0), train, queries)

    def test_topk_consistent(self) -> None:
        train, queries = self._data()
        check_topk_consistent(checked_fit(self.make_model(), train, seed=0), queries)

    def test_determinism(self) -> None:
        check_determinism(self.make_model, *self._data())

    def test_seed_and_data_change_lists(self) -> None:
        if not self.check_changes:
            import pytest

            pytest.skip("model declares that seeds do not change its lists")
        check_seed_changes(self.make_model, *self._data())
        check_deletion_changes(self.make_model, *self._data())

    def test_inputs_not_mutated(self) -> None:
        check_inputs_not_mutated(self.make_model, *self._data())

    def test_targets_not_read(self) -> None:
        check_targets_not_read(self.make_model, *self._data())

    def test_global_rng_untouched(self) -> None:
        check_global_rng_untouched(self.make_model, *self._data())

    def test_query_independence(self) -> None:
        check_query_independence(self.make_model, *self._data())

    def test_params_round_trip(self) -> None:
        check_params_round_trip(self.make_model)

    def test_unfitted_use(self) -> None:
        check_unfitted_use(self.make_model, self._data()[1])

    def test_pickling(self) -> None:
        check_pickling(self.make_model, *self._data())

    def test_numpy_seed(self) -> None:
        check_numpy_seed(self.make_model, *self._data())
